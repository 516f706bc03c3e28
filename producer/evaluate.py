"""``mtfleet eval``: translate a test set through the fleet and score it against references.

How an operator checks that a model (a quantized one, a new LoRA adapter, another pool) kept
its quality before it serves traffic: the source file goes through the fleet exactly as a
client's job would (the SDK, bulk lane, the pool and adapter asked for), and the output is
scored with sacrebleu, the reference implementation of BLEU and chrF (scores comparable with
published ones: its signature says how they were computed).

Files are one segment per line, aligned: line *n* of the references translates line *n* of the
source. Lines blank in the source are left out (with their reference); a segment that failed
counts as an empty translation, so failures lower the score rather than vanish from it.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mtfleet.producer.client import MTClient

#: Target languages sacrebleu's default 13a tokenizer cannot split into words; ``zh`` has a
#: tokenizer of its own, the others are scored on characters (sacrebleu's ``ja-mecab`` and
#: ``ko-mecab`` need MeCab, which mtfleet does not install).
TOKENIZERS = {"zh": "zh", "zh-Hant": "zh", "yue": "zh", "ja": "char", "ko": "char", "th": "char"}
TOKENIZERS |= {"my": "char", "km": "char", "bo": "char"}


class EvalError(Exception):
    """Input that cannot be evaluated (the message says why)."""


@dataclass
class EvalReport:
    source: str
    target: str
    pool: str | None  # the pool that translated it (the fleet's route when none was asked)
    adapter: str | None
    segments: int
    failed: int
    bleu: float
    chrf: float
    seconds: float
    skipped_blank: int = 0
    bleu_signature: str = ""
    chrf_signature: str = ""
    jobs: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def read_aligned(src: Path, ref: Path) -> tuple[list[str], list[str], int]:
    """(source segments, their references, source lines left out as blank)."""
    sources = src.read_text(encoding="utf-8-sig").splitlines()
    refs = ref.read_text(encoding="utf-8-sig").splitlines()
    if len(sources) != len(refs):
        raise EvalError(
            f"{src} has {len(sources)} lines and {ref} has {len(refs)}: the files must be "
            "aligned, one segment per line"
        )
    pairs = [(s, r) for s, r in zip(sources, refs, strict=True) if s.strip()]
    if not pairs:
        raise EvalError(f"{src} has no text")
    return [s for s, _ in pairs], [r for _, r in pairs], len(sources) - len(pairs)


def score(
    hypotheses: list[str], references: list[str], target: str
) -> tuple[float, float, str, str]:
    """(BLEU, chrF, their sacrebleu signatures) of a corpus."""
    from sacrebleu.metrics import BLEU, CHRF

    bleu = BLEU(tokenize=TOKENIZERS.get(target, "13a"))
    chrf = CHRF()
    refs = [references]
    return (
        bleu.corpus_score(hypotheses, refs).score,
        chrf.corpus_score(hypotheses, refs).score,
        str(bleu.get_signature()),
        str(chrf.get_signature()),
    )


def evaluate(
    mt: MTClient,
    src: Path,
    ref: Path,
    *,
    source: str,
    target: str,
    pool: str | None = None,
    adapter: str | None = None,
    lane: str = "bulk",
    timeout: float = 3600.0,
) -> EvalReport:
    """Translate ``src`` through the fleet (as many jobs as its limits need, waiting at most
    ``timeout`` seconds in all) and score the output against ``ref``."""
    texts, refs, blank = read_aligned(src, ref)
    limit = mt.limits().max_segments_per_job
    started = time.monotonic()
    jobs = [
        mt.submit(
            texts[i : i + limit],
            source=source,
            target=target,
            lane=lane,
            pool=pool,
            adapter=adapter,
        )
        for i in range(0, len(texts), limit)
    ]
    hypotheses: list[str] = []
    failed = 0
    for job in jobs:
        left = max(1.0, timeout - (time.monotonic() - started))
        if not mt.wait(job.id, timeout=left, poll_s=1.0).final:
            raise EvalError(
                f"job {job.id} is not finished after {timeout:.0f}s (it goes on: mtfleet "
                f"status {job.id})"
            )
        out = mt.result(job.id).translations
        failed += sum(1 for t in out if t is None)
        hypotheses += [t or "" for t in out]
    seconds = time.monotonic() - started
    first = jobs[0]
    bleu, chrf, bleu_sig, chrf_sig = score(hypotheses, refs, first.target_lang)
    return EvalReport(
        source=first.source_lang,
        target=first.target_lang,
        pool=first.pool,
        adapter=adapter,
        segments=len(texts),
        failed=failed,
        bleu=round(bleu, 2),
        chrf=round(chrf, 2),
        seconds=round(seconds, 3),
        skipped_blank=blank,
        bleu_signature=bleu_sig,
        chrf_signature=chrf_sig,
        jobs=[j.id for j in jobs],
    )
