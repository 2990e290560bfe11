"""``data/latency/<provider>.json``: inter-region round-trip latency, one module per provider
because each cloud publishes its own statistic in its own format."""
