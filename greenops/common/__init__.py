"""The small shared base every other package may use, and which imports none of them: the clock, the
error type, endpoints and the HTTP client, where the pinned tools are, and the safe YAML loader."""
