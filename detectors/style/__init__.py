"""detectors/style"""
