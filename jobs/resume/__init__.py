"""resume"""
