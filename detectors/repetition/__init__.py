"""detectors/repetition"""
