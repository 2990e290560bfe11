"""One module per file of ``data/``, named after it (``latency/azure.py`` writes
``data/latency/azure.json``). Each exposes ``FILE`` (the path and the schema model) and
``derive(...)``, which returns the document; ``common.write_catalog`` validates every document
against its model before writing any. ``scripts/derive_data.py`` runs them all."""
