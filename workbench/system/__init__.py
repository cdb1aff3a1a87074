"""Operating-system helpers: atomic writes, child processes, disk space, priority, regular files, timing marks."""
