"""``source_lang: "auto"``: the job's source language, and each text's own (mixed content).

Detection chooses among what the fleet can do: the languages some pool translates into the
target (:meth:`mtfleet.api.routing.Routing.sources_into`). Each text is detected on its own
(lingua, :mod:`mtfleet.core.langdetect`); a text is *clear* when it has enough letters and
lingua is confident in one language. The job's language is, in order:

1. the served language with the most letters among the clear detections, so a job mixing
   languages is not judged by a blend of them;
2. when no text is clearly in a served language: a text clearly in a language no pool
   translates into the target is refused (422, naming the language, the confidence and the
   languages served), rather than translated as if it were another;
3. otherwise (short or ambiguous text: "Hello", "Sale" are as Italian as English to a detector)
   the served language lingua rates highest for all the texts together: a short string goes to
   the source the fleet serves, not to a 422.

A text clearly in another language keeps that language: the service translates it from there,
or keeps it when it is already in the target language. The job records the language chosen
and lingua's confidence in it (0-1, among every language it knows: a few words score low).

Detection costs the API's CPU (10,000 texts: seconds), so the API runs it through a
:class:`Detector`: each API key has a bounded share of it (``MT_KEY_DETECTIONS`` at once per
API process, a few more waiting, the next 429), and every text detected is counted
(``mt_api_detected_texts_total``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from mtfleet.api import metrics
from mtfleet.api.shares import KeyShares
from mtfleet.core import langdetect, languages
from mtfleet.core.errors import InvalidInput, UnsupportedLanguage
from mtfleet.formats.base import TAG

AUTO = "auto"

#: A text's own detection counts (mixed content) from this many letters and this confidence
#: (lingua's relative confidence among ~35 candidates; a clear sentence scores well above it).
SEGMENT_MIN_LETTERS = 20
SEGMENT_MIN_CONFIDENCE = 0.5
#: Detections of one API key that may wait for its share, per detection of it.
QUEUED_PER_SHARE = 4
#: Seconds a detection waits for its key's share at most (the largest takes a few).
WAIT_S = 30.0


@dataclass(frozen=True)
class Detected:
    """A job's detected source language, each text's clear one where it differs (None
    elsewhere), and lingua's confidence in the job's language."""

    source: str
    segment_langs: list[str | None]
    confidence: float


def is_auto(source_lang: str) -> bool:
    return source_lang.lower() == AUTO


class Detector:
    """Detection as the API runs it (in worker threads): at most ``per_key`` detections of one
    API key at once (:class:`KeyShares`; four times as many more wait for them, up to
    :data:`WAIT_S`, the next are 429 with ``Retry-After``), so one key's flood of ``auto``
    requests waits for itself while another key's detections run; each text counted."""

    def __init__(self, per_key: int) -> None:
        self.shares = KeyShares(
            per_key,
            "language detections running",
            "MT_KEY_DETECTIONS",
            queue=QUEUED_PER_SHARE * per_key,
            wait_s=WAIT_S,
        )

    def each(self, texts: list[str], served: Collection[str], target: str, owner: str) -> Detected:
        """:func:`detect_each`, within ``owner``'s share."""
        with self.shares.hold(owner):
            metrics.DETECTED_TEXTS.inc(len(texts))
            return detect_each(texts, served, target)


def differing(found: Detected) -> Detected:
    """``found`` with each text's own language only where it differs from the job's."""
    return Detected(
        found.source,
        [lang if lang != found.source else None for lang in found.segment_langs],
        found.confidence,
    )


def detect_each(texts: list[str], served: Collection[str], target: str) -> Detected:
    """The job's language (see the module doc) and each text's clear detection (None: too
    short or unsure)."""
    plain = [TAG.sub(" ", s) for s in texts]
    total = sum(len(t) for t in plain)
    # lingua's full models are better on a few words (+465 MiB once per process); long
    # documents use its light trigram models
    accuracy: langdetect.Accuracy = "high" if total < 5000 else "low"
    ranked = langdetect.ranked_many(plain, accuracy=accuracy)
    sources = {lang for lang in served if lang != target}
    clear: list[str | None] = []
    letters: dict[str, int] = {}
    for text, scores in zip(plain, ranked, strict=True):
        top = max(scores, key=scores.__getitem__, default=None)
        n = sum(ch.isalpha() for ch in text)
        if top is not None and scores[top] >= SEGMENT_MIN_CONFIDENCE and n >= SEGMENT_MIN_LETTERS:
            clear.append(top)
            letters[top] = letters.get(top, 0) + n
        else:
            clear.append(None)
    usable = {lang: n for lang, n in letters.items() if lang in sources}
    if usable:
        source = max(usable, key=usable.__getitem__)
        confidence = _mean_confidence(ranked, clear, source)
    else:
        unserved = {lang: n for lang, n in letters.items() if lang != target}
        if unserved and sources:
            _refuse(max(unserved, key=unserved.__getitem__), ranked, clear, sources, target)
        source, confidence = _best_of(" ".join(plain), sources, accuracy)
    return Detected(source, clear, confidence)


def _mean_confidence(ranked: list[dict[str, float]], clear: list[str | None], lang: str) -> float:
    values = [scores[lang] for scores, c in zip(ranked, clear, strict=True) if c == lang]
    return round(sum(values) / len(values), 3)


def _best_of(sample: str, sources: set[str], accuracy: langdetect.Accuracy) -> tuple[str, float]:
    """The served source lingua rates highest for ``sample``; with no source served, the
    language it rates highest overall (routing then says that no pool serves the pair)."""
    scores = langdetect.ranked_many([sample], accuracy=accuracy)[0]
    pool = sources or set(scores)
    if not pool:
        raise InvalidInput(
            "could not detect the source language (too little text, or a language the "
            "detector does not know); give source_lang"
        )
    if not any(scores.get(lang, 0.0) > 0 for lang in pool):
        # nothing to tell (no letters: "12345"): any served source gives the same text back
        source = "en" if "en" in pool else min(pool)
        return source, 0.0
    source = max(sorted(pool), key=lambda lang: scores.get(lang, 0.0))
    return source, round(scores.get(source, 0.0), 3)


def _refuse(
    lang: str,
    ranked: list[dict[str, float]],
    clear: list[str | None],
    sources: set[str],
    target: str,
) -> None:
    confidence = _mean_confidence(ranked, clear, lang)
    name = languages.LANGUAGES[lang].english if lang in languages.LANGUAGES else lang
    raise UnsupportedLanguage(
        f"the text is in {name} ({lang}, detected with confidence {confidence:.2f}); this "
        f"fleet translates into {target} from: {', '.join(sorted(sources))}. Give source_lang "
        "if the detection is wrong",
        detected=lang,
        confidence=confidence,
        served=sorted(sources),
    )
