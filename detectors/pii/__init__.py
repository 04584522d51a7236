"""detectors/pii"""
