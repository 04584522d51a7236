"""pipeline/report"""
