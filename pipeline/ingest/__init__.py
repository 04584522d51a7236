"""pipeline/ingest"""
