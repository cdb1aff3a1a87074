"""Analyses of what the jobs wrote: tensor diffs, classification metrics, profiler tables, installed packages, distribution shift, the Lite gate."""
