"""The numerics replay: one training step re-run in PyNative with every cell output and gradient inspected."""
