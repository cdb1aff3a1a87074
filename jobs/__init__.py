"""Job programs, each run as `python -m jobs.<name> --job-dir DIR`."""
