"""The `train` job: the training loop, its timing, profiler window, data-parallel ranks and resume state."""
