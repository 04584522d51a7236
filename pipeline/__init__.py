"""chatmon's I/O side: ingestion, validation, shared features, the sink, metrics, the CLI."""

__version__ = "0.1.0"
