"""Acceptance: each layer's verdict (framework, task, performance, test set) with its evidence level and subject, and how to produce what is missing."""
