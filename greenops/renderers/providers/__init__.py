"""One module per provider; each registers a renderer with ``@renderer(<provider>)``."""
