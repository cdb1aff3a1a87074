"""Widgets shared by the screens (the UI side of the core)."""
