"""detectors/manipulation"""
