"""Run one batch through an engine so that one bad segment fails alone.

Pure logic over the engine contract (no Redis): segments that cannot fit are refused before the
call; a batch that raises is split in halves until the failing segment is isolated
(O(log n) extra calls for one bad segment); outer whitespace is kept around each translation;
empty output for non-empty input is a failed segment; output the engine cut off at its token
limit is delivered with a ``truncated`` warning, and output carrying markup its source did not
(a tag, an ``on*`` event handler, a ``javascript:`` URL: what a model talked into injecting
``<script>`` would produce) with a ``markup_mismatch`` warning. Neither is ever cached.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from core.errors import EngineError, EngineOutputMismatch, EngineUnavailable, SegmentTooLong
from core.models import SegmentOutcome
from workers.engines.base import Engine, Translation, TranslationRequest

log = logging.getLogger(__name__)

TRUNCATED = {
    "type": "truncated",
    "message": "the engine stopped at its token limit; the translation may be cut off",
}


# Markup the output check compares. A tag is ``<name ...>`` or ``</name>``; it counts when the name
# is an HTML element (SVG and MathML roots included), when it is a closing tag, or when it carries
# attributes, so a bare ``<word>`` (a placeholder, or the cost-model engine's ``<es>`` prefix) is
# text. Inside counted tags, event-handler attributes and script URLs count on their own.
_TAG = re.compile(r"<(/?)([^\W\d_][\w:.-]*)([^<>]*)>")
_HANDLER = re.compile(r"(?:^|[\s/\"'])(on[a-z]+)\s*=", re.IGNORECASE)
_SCRIPT_URL = re.compile(r"(java|vb)script\s*:", re.IGNORECASE)
_ELEMENT_NAMES = """
    a abbr address applet area article aside audio b base basefont bdi bdo blink blockquote
    body br button canvas caption center cite code col colgroup data datalist dd del details
    dfn dialog dir div dl dt em embed fieldset figcaption figure font footer form frame
    frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe image img input ins kbd
    keygen label legend li link main map mark marquee math menu meta meter nav noembed noframes
    noscript object ol optgroup option output p param picture plaintext portal pre progress q
    rp rt ruby s samp script search section select slot small source span strike strong style
    sub summary sup svg table tbody td template textarea tfoot th thead time title tr track tt
    u ul var video wbr xmp
"""
HTML_ELEMENTS = frozenset(_ELEMENT_NAMES.split())

MARKUP_MISMATCH = "markup_mismatch"


def markup(text: str) -> set[str]:
    """The markup items of a text: ``<tag>`` names (lower case), ``on*=`` handlers, script URLs."""
    items: set[str] = set()
    if "<" not in text:
        return items
    for m in _TAG.finditer(text):
        closing, name, attrs = m.group(1), m.group(2).lower(), m.group(3)
        if not (name in HTML_ELEMENTS or closing or attrs.strip(" /")):
            continue
        items.add(f"<{name}>")
        items.update(f"{h.lower()}=" for h in _HANDLER.findall(attrs))
        items.update(f"{s.lower()}script:" for s in _SCRIPT_URL.findall(attrs))
    return items


def markup_warning(source: str, output: str) -> dict[str, str] | None:
    """A ``markup_mismatch`` warning when the output has markup its source does not (the
    output's markup must be a subset of the source's), else None."""
    extra = markup(output)
    if extra:
        extra -= markup(source)
    if not extra:
        return None
    return {
        "type": MARKUP_MISMATCH,
        "message": "the translation has markup its source does not: " + ", ".join(sorted(extra)),
    }


def split_outer_space(text: str) -> tuple[str, str, str]:
    """(leading whitespace, core, trailing whitespace); all-space text is all lead."""
    core = text.strip()
    if not core:
        return text, "", ""
    start = text.index(core)
    return text[:start], core, text[start + len(core) :]


def outcome_of(
    out: str | Translation, lead: str = "", trail: str = "", source: str | None = None
) -> SegmentOutcome:
    """An engine's output as a segment outcome, outer whitespace of the source put back; with
    the ``source`` text, its markup is checked too."""
    text = out.text if isinstance(out, Translation) else out
    if not text.strip():
        return SegmentOutcome(
            error={"type": "empty_output", "message": "the engine returned no text"}
        )
    warnings = [TRUNCATED] if isinstance(out, Translation) and out.truncated else []
    mismatch = markup_warning(source, text) if source is not None else None
    if mismatch is not None:
        warnings.append(mismatch)
    return SegmentOutcome(translation=f"{lead}{text.strip()}{trail}", warnings=warnings)


def error_outcome(exc: BaseException) -> SegmentOutcome:
    err = exc if isinstance(exc, EngineError) else EngineError(f"{type(exc).__name__}: {exc}")
    return SegmentOutcome(error=err.as_dict())


def run_isolated(
    engine: Engine, requests: Sequence[TranslationRequest]
) -> list[str | Translation | SegmentOutcome]:
    """One engine output per request, or the failed outcome of a request that broke its batch.

    Raises :class:`EngineUnavailable` (nothing can succeed on this engine). A batch that raises
    anything else is split in halves until the failing request is alone.
    """
    results: list[str | Translation | SegmentOutcome | None] = [None] * len(requests)

    def run(idxs: list[int]) -> None:
        if not idxs:
            return
        batch = [requests[i] for i in idxs]
        try:
            texts = engine.translate(batch)
            if len(texts) != len(batch):
                raise EngineOutputMismatch(
                    f"engine {engine.name} returned {len(texts)} outputs for {len(batch)} inputs"
                )
        except EngineUnavailable:
            raise  # nothing can succeed on this engine: the chunk goes back to the queue
        except Exception as exc:  # noqa: BLE001 - isolate, then report per segment
            if len(idxs) == 1:
                outcome = error_outcome(exc)
                log.warning("segment failed in %s: %s", engine.name, outcome.error)
                results[idxs[0]] = outcome
                return
            mid = len(idxs) // 2
            run(idxs[:mid])
            run(idxs[mid:])
            return
        for i, out in zip(idxs, texts, strict=True):
            results[i] = out

    run(list(range(len(requests))))
    return [
        r if r is not None else SegmentOutcome(error={"type": "internal", "message": "lost"})
        for r in results
    ]


def translate_isolated(
    engine: Engine, requests: Sequence[TranslationRequest]
) -> list[SegmentOutcome]:
    """One outcome per request, same order; never raises for a segment's own failure."""
    outcomes: list[SegmentOutcome | None] = [None] * len(requests)
    runnable: list[int] = []
    stripped: list[TranslationRequest] = []
    spaces: list[tuple[str, str]] = []
    for i, req in enumerate(requests):
        lead, core, trail = split_outer_space(req.text)
        spaces.append((lead, trail))
        if not core:
            outcomes[i] = SegmentOutcome(translation=req.text)
            stripped.append(req)
            continue
        core_req = TranslationRequest(core, req.source, req.target, req.priority)
        stripped.append(core_req)
        reason = engine.check(core_req)
        if reason:
            outcomes[i] = SegmentOutcome(error=SegmentTooLong(reason).as_dict())
        else:
            runnable.append(i)
    results = run_isolated(engine, [stripped[i] for i in runnable])
    for i, res in zip(runnable, results, strict=True):
        outcomes[i] = (
            res
            if isinstance(res, SegmentOutcome)
            else outcome_of(res, *spaces[i], source=stripped[i].text)
        )
    return [
        o if o is not None else SegmentOutcome(error={"type": "internal", "message": "lost"})
        for o in outcomes
    ]
