"""What several jobs share: the network, the data feed, device selection, checkpoints, telemetry, legs."""
