"""pipeline/embedded"""
