"""fold"""
