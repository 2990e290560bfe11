"""``data/carbon/``: grid carbon-intensity facts per Electricity Maps zone."""
