"""pipeline/scoring"""
