"""Client side of mtfleet: the Python SDK (sync and async) and the ``mtfleet`` CLI."""

from mtfleet.producer.client import (
    AsyncMTClient,
    Job,
    JobResult,
    JobTimeout,
    MTClient,
    MTClientError,
)

__all__ = ["AsyncMTClient", "Job", "JobResult", "JobTimeout", "MTClient", "MTClientError"]
