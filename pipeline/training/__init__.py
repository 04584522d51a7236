"""pipeline/training"""
