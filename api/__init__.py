"""The HTTP API (FastAPI). Imports ``core`` only: it enqueues work by task name."""
