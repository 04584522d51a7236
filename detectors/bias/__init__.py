"""detectors/bias"""
