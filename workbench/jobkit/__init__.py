"""jobkit"""
