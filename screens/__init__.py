"""The Textual app (screens.app) and its screens, one per mode, drawn from the core's views; never imports mindspore."""
