"""acceptance"""
