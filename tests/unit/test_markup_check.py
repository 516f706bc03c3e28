"""workers/translation.py and core/markup.py: output whose markup is not a subset of its
source's fails its check: translated once more, then withheld with a ``markup_mismatch`` error
(never delivered, never cached); plain text and the source's own tags pass. Script URLs are
judged after character references are decoded, in tags and in Markdown links alike.

The engine is a scripted one that appends a fixed suffix to chosen segments, as a model talked
into injecting markup by its input would; its output goes through the worker's real chunk path
(tests/support.py), and the ``markup`` / ``markup_warning`` functions are tested on their own.
"""

from __future__ import annotations

import pytest

from mtfleet.workers.engines.base import Translation, TranslationRequest
from mtfleet.workers.translation import MARKUP_MISMATCH, markup, markup_warning
from tests.support import ChunkRun, ScriptedEngine


def appending(marker: str, suffix: str, *, truncated: bool = False) -> ScriptedEngine:
    """Echoes each text; appends ``suffix`` to texts that contain ``marker``."""

    def script(r: TranslationRequest) -> Translation:
        return Translation(r.text + (suffix if marker in r.text else ""), truncated=truncated)

    return ScriptedEngine(script)


def run(engine: ScriptedEngine, *texts: str) -> list[dict[str, str] | None]:
    """The markup_mismatch error (or None) of each text's outcome; a withheld translation is
    never cached and was tried twice, a clean one is cached."""
    bench = ChunkRun(engine)
    try:
        outcomes = bench.run(list(texts))
        cached = bench.cached(texts)
    finally:
        bench.close()
    found: list[dict[str, str] | None] = []
    for text, o in zip(texts, outcomes, strict=True):
        assert not any(w["type"] == MARKUP_MISMATCH for w in o.warnings)
        if o.ok:
            found.append(None)
            assert (text.strip() in cached) == (not o.warnings), text
            continue
        assert o.error is not None and o.error["type"] == MARKUP_MISMATCH, o
        assert o.translation is None and text.strip() not in cached
        assert "withheld" in o.error["message"] and "after one retry" in o.error["message"]
        assert sum(b.count(text.strip()) for b in engine.batches) == 2
        found.append(o.error)
    return found


@pytest.mark.parametrize(
    ("suffix", "named"),
    [
        ("<script>alert(1)</script>", "<script>"),
        ('<img src=x onerror="alert(1)">', "onerror="),
        ("<IMG SRC=x OnError=alert(1)>", "onerror="),
        ("<img/src=x onload=alert(1)>", "onload="),
        ('<a href="javascript:alert(1)">win</a>', "javascript:"),
        ("<iframe src=//evil.example></iframe>", "<iframe>"),
        ("<svg onload=alert(1)>", "<svg>"),
        ("<b>bold</b>", "<b>"),
        ("</div>", "<div>"),
        ('<span title="x">y</span>', "<span>"),
        ('<a href="jav&#x61;script:alert(1)">win</a>', "javascript:"),
        ('<a href="java\tscript:alert(1)">win</a>', "javascript:"),
        ('<a href="data:text/html,<script>x()</script>">win</a>', "data:"),
        ("[click](javascript:alert(document.cookie))", "link to javascript:"),
        ("![x](JavaScript:alert(1))", "link to javascript:"),
        ("[x](jav&#x61;script:alert(1))", "link to javascript:"),
        ("<javascript:alert(1)>", "link to javascript:"),
    ],
)
def test_markup_the_source_does_not_have_is_flagged(suffix: str, named: str) -> None:
    clean, injected = run(appending("INJECT", suffix), "Red shoes", "INJECT Blue shoes")
    assert clean is None
    assert injected is not None and named in injected["message"]


@pytest.mark.parametrize(
    "source",
    [
        '<p onclick="go()">Red <b>shoes</b></p><script>track()</script>',
        '<img src="shoe.png" onerror="fallback()"> Red shoes',
        'Click <a href="javascript:buy()">here</a>',
        "<SCRIPT>x()</SCRIPT> caps in the source",
    ],
)
def test_markup_already_in_the_source_passes(source: str) -> None:
    # The engine echoes the source: every tag, handler and URL scheme in the output is one the
    # source had, so output markup is a subset of input markup.
    assert run(appending("never", ""), source) == [None]
    assert markup(source) and markup(source) <= markup(source.upper())  # case-insensitive


@pytest.mark.parametrize(
    "output",
    [
        "<es> Zapatos rojos",  # a bare <word>: a placeholder, not an HTML element
        "a < b > c",
        "x<3 and 5>y",
        "<<>> brackets",
        "price: <10 €",
    ],
)
def test_plain_angle_brackets_are_text(output: str) -> None:
    assert markup(output) == set()
    assert markup_warning("plain source", output) is None


def test_a_renamed_tag_with_attributes_is_a_mismatch() -> None:
    # What a rule-based engine does to HTML it takes for words: <a href> becomes <un href>.
    warning = markup_warning('Click <a href="/buy">here</a>', 'Clic <un href="/buy">aquí</un>')
    assert warning is not None and "<un>" in warning["message"]


def test_a_translation_that_drops_tags_is_not_flagged() -> None:
    # Only markup the output adds matters (output ⊆ input); a dropped tag is not an injection.
    assert markup_warning("<b>Red</b> shoes", "Zapatos rojos") is None


def test_a_raster_data_image_and_plain_links_are_not_script() -> None:
    assert markup('<img src="data:image/png;base64,iVBOR">') == {"<img>"}
    assert markup("[docs](https://example.com/a) and [1]") == set()
    assert markup('<img src="data:image/svg+xml,<svg onload=x()>">') >= {"data:"}


def test_an_injection_the_retry_does_not_repeat_is_delivered_clean() -> None:
    calls: dict[str, int] = {}

    def once(r: TranslationRequest) -> Translation:
        calls[r.text] = calls.get(r.text, 0) + 1
        return Translation(r.text + ("<script>x()</script>" if calls[r.text] == 1 else ""))

    bench = ChunkRun(ScriptedEngine(once))
    try:
        (out,) = bench.run(["INJECT it"])
        # the retry passed every check: it is the answer, and cached like any clean one
        assert bench.cached(["INJECT it"]) == {"INJECT it": "INJECT it"}
    finally:
        bench.close()
    assert out.translation == "INJECT it" and calls == {"INJECT it": 2}


def test_outer_whitespace_and_protected_spans_do_not_hide_an_injection() -> None:
    bench = ChunkRun(appending("INJECT", '<img src=x onerror="alert(1)">'))
    try:
        clean, spaced, spans = bench.run(
            ["See https://a.example/p for {name}", "  INJECT it\n", "INJECT https://a.example/p"]
        )
    finally:
        bench.close()
    assert clean.translation == "See https://a.example/p for {name}" and clean.warnings == []
    for flagged in (spaced, spans):
        assert flagged.translation is None and flagged.error is not None
        assert flagged.error["type"] == MARKUP_MISMATCH and "onerror=" in flagged.error["message"]
