"""``source_lang: "auto"``: the job's source language, and each text's own (mixed content).

Each text is detected on its own (lingua, :mod:`mtfleet.core.langdetect`); the job's language
is the one with the most letters among the clear detections, so a job mixing languages is not
judged by a blend of them. A text clearly in another language keeps that language: the service
translates it from there, or keeps it when it is already in the target language.
"""

from __future__ import annotations

from mtfleet.core import langdetect
from mtfleet.core.documents.base import TAG
from mtfleet.core.errors import InvalidInput

AUTO = "auto"

#: A text's own detection counts (mixed content) from this many letters and this confidence
#: (lingua's relative confidence among ~35 candidates; a clear sentence scores well above it).
SEGMENT_MIN_LETTERS = 20
SEGMENT_MIN_CONFIDENCE = 0.5


def is_auto(source_lang: str) -> bool:
    return source_lang.lower() == AUTO


def detect_source(sample: str) -> str:
    """The language of ``sample``; 422 when it cannot be told. Short samples use lingua's full
    models (better on a few words; +465 MiB once per process), long ones its trigram models."""
    found = langdetect.detect(sample, accuracy="high" if len(sample) < 200 else "low")
    if found is None:
        raise InvalidInput(
            "could not detect the source language (too little text, or a language the "
            "detector does not know); give source_lang"
        )
    return found[0]


def detect(texts: list[str]) -> tuple[str, list[str | None]]:
    """The job's language, and per text its own language where it is clear and differs from
    the job's (None elsewhere). 422 when nothing can be told."""
    source, clear = detect_each(texts)
    return source, [lang if lang != source else None for lang in clear]


def detect_each(texts: list[str]) -> tuple[str, list[str | None]]:
    """The job's language and each text's clear detection (None: too short or unsure)."""
    plain = [TAG.sub(" ", s) for s in texts]
    total = sum(len(t) for t in plain)
    # lingua's full models are better on a few words (+465 MiB once per process); long
    # documents use its light trigram models
    found = langdetect.detect_many(plain, accuracy="high" if total < 5000 else "low")
    clear: list[str | None] = []
    letters: dict[str, int] = {}
    for text, hit in zip(plain, found, strict=True):
        n = sum(ch.isalpha() for ch in text)
        if hit is not None and hit[1] >= SEGMENT_MIN_CONFIDENCE and n >= SEGMENT_MIN_LETTERS:
            clear.append(hit[0])
            letters[hit[0]] = letters.get(hit[0], 0) + n
        else:
            clear.append(None)
    job = max(letters, key=lambda k: letters[k]) if letters else detect_source(" ".join(plain))
    return job, clear
