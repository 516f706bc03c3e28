"""Shared pieces of mtfleet: settings, models, Redis keys, job store, phrase cache.

Nothing in here imports the API, the workers or any engine, so every process can use it.
"""
