"""Masking secrets: one rule for names and values, applied to environments, texts and whole files of a record."""
