"""Compare two runs: their inputs, their numbers side by side and a verdict within tolerances."""
