"""Output checks per segment, run by the worker after glossary terms are restored.

Each finding is a warning ``{"type", "message"}`` on the segment's outcome, which reaches the
API result's ``warnings``; a warned translation is never cached.

**Hard** (the segment is translated once more; still failing, it is delivered with the warning,
except empty output, which stays an error):

* ``empty_output`` — the engine returned nothing (an error, from :mod:`workers.translation`);
* ``tag_mismatch`` — the inline tags (``<xN/>``, ``<gN>``, glossary terms' tags) of the raw
  output differ in number from the source's, compared before restoration;
* ``placeholder_mismatch`` — the placeholders (``{name}``, ``{{name}}``, ``%s``, ``%(name)s``...)
  differ: a renamed or dropped placeholder breaks the string it goes into;
* ``protected_term`` — a protected term of the glossary found in the source is missing from the
  output, or the output also has it in another casing;
* ``glossary_term`` — an entry's target term is missing.

**Soft** (delivered with the warning, not retried):

* ``length_ratio`` — for sources of at least 20 characters, the output is over
  ``MT_CHECK_LENGTH_RATIO`` times longer or shorter than expected, expected being the source's
  length scaled by how dense the two scripts are (Chinese and Japanese need about a third of the
  characters of English). Real translations stay well inside (Apertium en->es on 767 catalogue
  strings of 20+ characters: 0.86x-1.62x); 3x catches a dropped half, a truncation or a
  repetition loop without flagging good output (every false alarm costs a phrase-cache entry).
* ``wrong_language`` — the detector (lingua, low-accuracy mode: trigrams, ~65 MiB, ~45-65 µs
  of CPU a text) gives the target language under 0.5 % and another language at least 50 %, on
  outputs with at least 20 letters once tags, placeholders and glossary terms are taken out.
  Never for a target the detector does not know (:func:`core.langdetect.supports`).
  ``MT_CHECK_LANGUAGE`` turns it off (then no worker loads the detector). Measured on 1,429
  real Apertium outputs (en->es and es->en of the demo catalogue and the benchmark phrases):
  2 false alarms; on 1,393 outputs left untranslated: 93 % flagged. The high-accuracy models
  gave no false alarm but flagged only 27-64 % (their confidence spreads wider on short text)
  and cost +465 MiB per worker.
* ``markup_mismatch`` (:mod:`workers.translation`: tags, handlers or script URLs the source
  does not have, judged by :mod:`core.markup`) is hard, and a segment whose retry still has it
  fails with that error: injected markup is never served nor cached. The output is checked
  again after glossary targets are put in.
* ``truncated`` comes from :mod:`workers.translation` as before.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter

from mtfleet.core import languages
from mtfleet.core.errors import Unfinished
from mtfleet.core.glossary import PLACEHOLDER, Matcher, Placed, Protected
from mtfleet.core.models import Finding, SegmentOutcome
from mtfleet.core.patterns import ProtectedPatterns
from mtfleet.formats.base import tag_counts
from mtfleet.formats.pipeline import next_code
from mtfleet.formats.pipeline import protect as protect_spans
from mtfleet.workers.translation import markup_warning

log = logging.getLogger(__name__)

EMPTY = Finding.empty_output.value
TAG_MISMATCH = Finding.tag_mismatch.value
PLACEHOLDER_MISMATCH = Finding.placeholder_mismatch.value
PROTECTED_TERM = Finding.protected_term.value
GLOSSARY_TERM = Finding.glossary_term.value
LENGTH_RATIO = Finding.length_ratio.value
WRONG_LANGUAGE = Finding.wrong_language.value
MARKUP = Finding.markup_mismatch.value

HARD = frozenset({EMPTY, TAG_MISMATCH, PLACEHOLDER_MISMATCH, PROTECTED_TERM, GLOSSARY_TERM, MARKUP})

MIN_RATIO_CHARS = 20
MIN_LANGUAGE_LETTERS = 20
#: wrong_language: the target at most this likely, another language at least TOP_CONFIDENCE.
TARGET_CONFIDENCE = 0.005
TOP_CONFIDENCE = 0.5
#: Characters a text needs relative to English (scripts not listed: 1).
DENSITY = {"zh": 0.33, "zh-Hant": 0.33, "yue": 0.33, "ja": 0.4, "ko": 0.5}

WARNINGS = Counter(
    "mt_worker_output_warnings_total", "Segments delivered with an output-check warning", ["type"]
)
RETRIES = Counter(
    "mt_worker_check_retries_total", "Segments translated again after failing a hard check"
)
_MARKUP = re.compile(r"</?[A-Za-z][^<>]*>")
# What a length or language check leaves out, in one pass: markup (our inline tags are markup
# too) and placeholders.
_NOT_TEXT = re.compile(f"{_MARKUP.pattern}|{PLACEHOLDER.pattern}")

CheckWarning = dict[str, Any]


def warning(type_: str, message: str) -> CheckWarning:
    return {"type": type_, "message": message}


def _counts_diff(want: dict[str, int], got: dict[str, int], name: Callable[[str], str]) -> str:
    parts = []
    for item in sorted(set(want) | set(got)):
        w, g = want.get(item, 0), got.get(item, 0)
        if w != g:
            parts.append(f"{name(item)} {g}x instead of {w}x")
    return ", ".join(parts)


def tag_mismatch(
    tagged_source: str, raw_output: str, placed: Sequence[Placed] = ()
) -> CheckWarning | None:
    """Inline tags of the engine's output (before restoration) against the source's."""
    if not (_may_hold_tags(tagged_source) or _may_hold_tags(raw_output)):
        return None
    want, got = tag_counts(tagged_source), tag_counts(raw_output)
    if want == got:
        return None
    terms = {f"<x{p.number}/>": p.replacement for p in placed}

    def name(tag: str) -> str:
        return f"{tag} (glossary term {terms[tag]!r})" if tag in terms else tag

    return warning(
        TAG_MISMATCH, "inline tags differ from the source's: " + _counts_diff(want, got, name)
    )


def placeholder_counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in PLACEHOLDER.finditer(text):
        counts[m.group(0)] = counts.get(m.group(0), 0) + 1
    return counts


def _may_hold_placeholders(text: str) -> bool:
    return "{" in text or "%" in text


def placeholder_mismatch(source: str, output: str) -> CheckWarning | None:
    if not (_may_hold_placeholders(source) or _may_hold_placeholders(output)):
        return None
    want, got = placeholder_counts(source), placeholder_counts(output)
    if want == got:
        return None
    return warning(
        PLACEHOLDER_MISMATCH,
        "placeholders differ from the source's: " + _counts_diff(want, got, str),
    )


def _occurrences(term: str, text: str) -> list[str]:
    """Every case-insensitive occurrence of ``term`` in ``text`` on word boundaries."""
    words = [re.escape(w) for w in term.split()]
    pattern = r"\s+".join(words)
    if re.match(r"\w", term):
        pattern = r"(?<!\w)" + pattern
    if re.search(r"\w$", term):
        pattern += r"(?!\w)"
    return re.findall(pattern, text, re.IGNORECASE)


def term_warnings(output: str, placed: Sequence[Placed]) -> list[CheckWarning]:
    """Glossary terms placed in the source must be in the output: protected terms exactly as
    the glossary spells them (and in no other casing), target terms in any casing."""
    need: dict[tuple[str, bool], int] = {}
    for p in placed:
        key = (p.replacement if p.term.protected else p.replacement.casefold(), p.term.protected)
        need[key] = need.get(key, 0) + 1
    out: list[CheckWarning] = []
    for (term, protected), count in need.items():
        found = _occurrences(term, output)
        if protected:
            exact = sum(1 for f in found if f == term)
            other = sorted({f for f in found if f != term})
            if exact < count:
                out.append(
                    warning(
                        PROTECTED_TERM,
                        f"protected term {term!r} appears {exact}x in the translation, "
                        f"{count}x in the source",
                    )
                )
            if other:
                out.append(
                    warning(
                        PROTECTED_TERM,
                        f"protected term {term!r} also appears as {', '.join(map(repr, other))}",
                    )
                )
        elif len(found) < count:
            out.append(
                warning(
                    GLOSSARY_TERM,
                    f"glossary term {term!r} appears {len(found)}x in the translation, "
                    f"{count}x in the source",
                )
            )
    return out


def _may_hold_tags(text: str) -> bool:
    """Whether ``text`` may hold one of our inline tags (``<xN/>``, ``<gN>``, ``</gN>``)."""
    return "<x" in text or "<g" in text or "</g" in text


def _plain(text: str) -> str:
    if "<" not in text and not _may_hold_placeholders(text):
        return text
    return _NOT_TEXT.sub(" ", text)


def length_ratio(
    source: str, output: str, source_lang: str, target_lang: str, bound: float
) -> CheckWarning | None:
    src, out = _plain(source).strip(), _plain(output).strip()
    if len(src) < MIN_RATIO_CHARS:
        return None
    expected = len(src) * DENSITY.get(target_lang, 1.0) / DENSITY.get(source_lang, 1.0)
    ratio = len(out) / expected
    if 1 / bound <= ratio <= bound:
        return None
    return warning(
        LENGTH_RATIO,
        f"the translation has {len(out)} characters for a source of {len(src)}; about "
        f"{expected:.0f} were expected (outside {1 / bound:.2g}x-{bound:g}x)",
    )


def language_warnings(
    outputs: Sequence[str], target: str, remove: Sequence[Sequence[str]] = ()
) -> list[CheckWarning | None]:
    """``wrong_language`` per output (None where it passes or cannot be told); ``remove[i]``:
    strings taken out of output i first (its glossary terms)."""
    from mtfleet.core import langdetect

    result: list[CheckWarning | None] = [None] * len(outputs)
    if not langdetect.supports(target):
        return result
    texts: list[str] = []
    where: list[int] = []
    for i, out in enumerate(outputs):
        text = _plain(out)
        for term in remove[i] if i < len(remove) else ():
            text = text.replace(term, " ")
        if len(text) > LANGUAGE_CHARS:  # its opening tells the language as well as the whole
            text = text[: text.rfind(" ", 0, LANGUAGE_CHARS) + 1 or LANGUAGE_CHARS]
        if sum(ch.isalpha() for ch in text) >= MIN_LANGUAGE_LETTERS:
            texts.append(text)
            where.append(i)
    if not texts:
        return result
    likely = langdetect.confidence_many(texts, target, accuracy="low")
    doubtful = [k for k, c in enumerate(likely) if c < TARGET_CONFIDENCE]
    found = langdetect.detect_many([texts[k] for k in doubtful], accuracy="low")
    want = languages.get(target).english
    for k, top in zip(doubtful, found, strict=True):
        if top is None or top[1] < TOP_CONFIDENCE:
            continue
        result[where[k]] = warning(
            WRONG_LANGUAGE,
            f"the translation looks like {languages.get(top[0]).english} (confidence "
            f"{top[1]:.2f}), not {want} ({likely[k]:.3f})",
        )
    return result


def is_hard(w: CheckWarning) -> bool:
    return w.get("type") in HARD


def needs_retry(outcome: SegmentOutcome) -> bool:
    if outcome.error is not None:
        return outcome.error.get("type") == EMPTY
    return any(is_hard(w) for w in outcome.warnings)


@dataclass(frozen=True)
class CheckConfig:
    source: str
    target: str
    length_ratio: float = 3.0
    language: bool = True


def finish(
    original: str, prep: Protected, outcome: SegmentOutcome, cfg: CheckConfig
) -> SegmentOutcome:
    """The engine's outcome for ``prep`` with glossary terms restored and checked (no language
    check: that one runs per batch, :func:`language_warnings`)."""
    if not outcome.ok or outcome.translation is None:
        return outcome
    raw = outcome.translation
    warnings = list(outcome.warnings)
    found = tag_mismatch(prep.text, raw, prep.placed)
    if found:
        warnings.append(found)
    final = prep.restore(raw)
    injected = None
    if prep.placed and not any(w.get("type") == MARKUP for w in warnings):
        injected = markup_warning(original, final)  # a glossary target carried it in
    for w in (
        injected,
        placeholder_mismatch(original, final),
        *(term_warnings(final, prep.placed) if prep.placed else ()),
        length_ratio(original, final, cfg.source, cfg.target, cfg.length_ratio),
    ):
        if w:
            warnings.append(w)
    if final == raw and len(warnings) == len(outcome.warnings):
        return outcome  # nothing restored, nothing found
    return SegmentOutcome(translation=final, warnings=warnings)


def _better(first: SegmentOutcome, second: SegmentOutcome) -> SegmentOutcome:
    """After a retry: the retry when it passes or gave a translation; else the first (a
    translation with a warning beats an empty one). Hard warnings left say a retry was made.
    A retry its chunk's time budget cut short leaves the segment unfinished (its next delivery
    translates it again)."""
    if second.error is not None and second.error.get("type") == Unfinished.code:
        return second
    pick = second if second.ok or not first.ok else first
    if pick.ok:
        pick.warnings = [
            {**w, "message": f"{w['message']} (also after one retry)"} if is_hard(w) else w
            for w in pick.warnings
        ]
    return pick


def _refused(outcome: SegmentOutcome) -> SegmentOutcome:
    """A translation that still carries markup its source does not is not delivered."""
    if not outcome.warnings:
        return outcome  # (most outcomes: no scan)
    found = next((w for w in outcome.warnings if w.get("type") == MARKUP), None)
    if found is None or not outcome.ok:
        return outcome
    return SegmentOutcome(
        error={"type": MARKUP, "message": f"{found['message']}; the translation was withheld"}
    )


def prepare(
    text: str,
    matcher: Matcher | None,
    *,
    tags: bool = True,
    patterns: ProtectedPatterns | None = None,
) -> Protected:
    """What the engine gets for ``text``: URLs, e-mail addresses, placeholders (``{name}``,
    ``%s``...), template tags, numbers with units, SKU codes and the matches of the job's
    protected ``patterns`` as standalone tags (:func:`formats.pipeline.protect`), then
    the glossary's terms (tags, or with ``tags=False`` only listed, for the prompt);
    ``restore`` puts all of them back."""
    first = next_code(text) if "<" in text else 1
    spanned, span_codes = protect_spans(text, first, patterns.find if patterns else None)
    prep = matcher.protect(spanned, tags=tags) if matcher else Protected(spanned)
    if span_codes:
        prep.codes = {**span_codes, **prep.codes}
    return prep


#: Characters of an output the language check reads (cut at a word): the detector's time
#: grows with the text, and a sentence's first 160 characters tell its language as well as
#: the whole of it (Apertium's Spanish output here: ~150 µs per sentence whole, ~95 cut).
LANGUAGE_CHARS = 160
#: Outputs language-checked between two calls of ``translate_checked``'s ``pause``.
LANGUAGE_SLICE = 16


#: What ``translate_checked`` submits: each segment's position in its ``texts`` and what the
#: engine gets for it (:func:`prepare`: its text, and the glossary's terms it holds).
Submitted = list[tuple[int, Protected]]


def translate_checked(
    submit: Callable[[Submitted], list[SegmentOutcome]],
    texts: Sequence[str],
    cfg: CheckConfig,
    matcher: Matcher | None = None,
    pause: Callable[[], None] | None = None,
    *,
    terms_in_prompt: bool = False,
    patterns: ProtectedPatterns | None = None,
) -> tuple[list[SegmentOutcome], int]:
    """Translate ``texts`` (normalized segments) through ``submit`` (the scheduler), applying the
    glossary (as tags, or listed for the prompt with ``terms_in_prompt``), the job's protected
    ``patterns`` (:func:`prepare`) and every check; a segment failing a hard check is submitted
    once more. Returns the outcomes, in order, and how many segments were retried. ``pause`` is
    called between slices of the language check, the costliest step (a bulk chunk's: it gives way
    to interactive work there)."""
    preps = [prepare(t, matcher, tags=not terms_in_prompt, patterns=patterns) for t in texts]
    outs = [
        finish(t, p, o, cfg)
        for t, p, o in zip(texts, preps, submit(list(enumerate(preps))), strict=True)
    ]
    retry = [i for i, o in enumerate(outs) if needs_retry(o)]
    if retry:
        RETRIES.inc(len(retry))
        again = submit([(i, preps[i]) for i in retry])
        for i, o in zip(retry, again, strict=True):
            outs[i] = _better(outs[i], finish(texts[i], preps[i], o, cfg))
    outs = [_refused(o) for o in outs]
    if cfg.language:
        ok = [i for i, o in enumerate(outs) if o.ok and o.translation is not None]
        step = LANGUAGE_SLICE if pause is not None else max(len(ok), 1)
        for first in range(0, len(ok), step):
            part = ok[first : first + step]
            if pause is not None:
                pause()
            try:
                found = language_warnings(
                    [outs[i].translation or "" for i in part],
                    cfg.target,
                    [[p.replacement for p in preps[i].placed] for i in part],
                )
            except Exception as exc:  # noqa: BLE001 - a soft check must never fail a chunk
                log.warning("language check skipped: %s", exc)
                found = []
            for i, w in zip(part, found, strict=False):
                if w is not None:
                    outs[i].warnings.append(w)
    for o in outs:
        for w in o.warnings:
            WARNINGS.labels(str(w.get("type", "warning"))).inc()
    return outs, len(retry)
