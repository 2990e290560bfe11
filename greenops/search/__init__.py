"""The carbon-aware search: where and when each job of a request runs (algorithm), large searches
in a worker process (offload), and the replayed track record the ``sure`` rule weighs (track). It
reads carbon-intensity series (greenops.intensity) and books nothing: the scheduler service does."""
