"""Documents: the processes that read and render them, their memory and deadlines."""

from __future__ import annotations

from pydantic import Field

from mtfleet.core.settings.base import (
    Component,
)


class DocumentSettings(Component):
    """Documents: the processes that read and render them, their memory and deadlines."""

    preload: bool = Field(
        True,
        description="Load the language detector's models and start the document processes "
        "before the API serves (the first auto-detected request and the first document wait "
        "for neither). false: on first use (a smaller, faster-starting API that never detects "
        "a language nor reads a document).",
    )
    document_deadline_s: float = Field(
        20.0,
        gt=0,
        le=600,
        description="Seconds reading or rendering one document may take (in a worker process of "
        "the API, stopped at the deadline: 422 document_too_complex).",
    )
    document_memory_mb: int = Field(
        1024,
        ge=128,
        description="Memory one document's reading or rendering may use, in MiB (422 "
        "document_too_complex past it).",
    )
    document_workers: int = Field(
        2, ge=1, le=64, description="Processes per API process that read and render documents."
    )
    document_workers_per_key: int | None = Field(
        None,
        ge=1,
        le=64,
        description="Documents one API key may have read or rendered at once per API process "
        "(running or waiting for a process); four times as many more of its calls wait for "
        "them (files uploaded together), the next are 429, so one tenant's uploads never queue "
        "another's. Default: half of MT_DOCUMENT_WORKERS, at least 1.",
    )
