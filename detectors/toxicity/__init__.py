"""detectors/toxicity"""
