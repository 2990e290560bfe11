"""The GreenOps scheduler: carbon-aware choice of grid zone and start time."""
