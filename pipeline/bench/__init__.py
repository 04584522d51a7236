"""pipeline/bench"""
