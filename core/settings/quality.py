"""Quality estimation: the model that scores translated segments and the threshold that marks them
for review.
"""

from __future__ import annotations

from pydantic import Field

from mtfleet.core.settings.base import (
    Component,
)


class QualitySettings(Component):
    """Quality estimation: the model that scores translated segments and the threshold that marks
    them for review.
    """

    qe_model: str | None = Field(
        None,
        description="A quality-estimation model a worker loads beside its engine (mtfleet "
        "worker --qe-model; a local path or a Hugging Face name): a MetricX-24 regressor, "
        "google/metricx-24-hybrid-large-v2p6 (or -xl-, -xxl-; Apache-2.0), read with "
        "transformers as an mT5 encoder-decoder. Its "
        "pool then scores each translated segment of a request asking quality_estimation "
        "(0 best, 25 worst; docs/quality.md); a request asking it of a pool without one is "
        "refused. Unset: no quality estimation.",
    )
    qe_tokenizer: str | None = Field(
        None,
        description="The tokenizer of MT_QE_MODEL (a path or a Hugging Face name). MetricX-24's "
        "checkpoints ship without one: google/mt5-xl. Default: the model's own.",
    )
    qe_threshold: float = Field(
        5.0,
        ge=0,
        le=25,
        description="A scored segment above this MetricX score (0 best, 25 worst) gets a "
        "low_quality warning and is marked for review in a document (#, fuzzy in a PO file, "
        "state needs-review-translation in XLIFF).",
    )
    qe_batch_size: int = Field(
        16, ge=1, le=1024, description="Segments the quality-estimation model scores at once."
    )
