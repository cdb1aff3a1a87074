"""Running jobs: the runner, its supervisor, device choice and locks, msrun for data-parallel runs."""
