"""Drawing without a UI toolkit: SVG charts and heat maps, human-readable numbers and durations."""
