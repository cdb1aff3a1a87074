"""record/markdown"""
