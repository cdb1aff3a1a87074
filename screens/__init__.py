"""Textual screens, one per module, each the face of one job."""
