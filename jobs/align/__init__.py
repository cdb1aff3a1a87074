"""align"""
