"""masking"""
