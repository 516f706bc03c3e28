"""workers/translation.py: output whose markup is not a subset of its source's gets a
``markup_mismatch`` warning (delivered, never cached); plain text and the source's own tags pass.

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
    """The markup_mismatch warning (or None) of each text's outcome; a flagged translation is
    never cached, a clean one is."""
    bench = ChunkRun(engine)
    try:
        outcomes = bench.run(list(texts))
        cached = bench.cached(texts)
    finally:
        bench.close()
    assert all(o.ok for o in outcomes)
    found: list[dict[str, str] | None] = []
    for text, o in zip(texts, outcomes, strict=True):
        mismatches = [w for w in o.warnings if w["type"] == MARKUP_MISMATCH]
        assert len(mismatches) <= 1
        found.append(mismatches[0] if mismatches else None)
        assert (text.strip() in cached) == (not o.warnings), text
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


def test_markup_warning_comes_with_other_warnings() -> None:
    bench = ChunkRun(appending("INJECT", "<script>x()</script>", truncated=True))
    try:
        (out,) = bench.run(["INJECT it"])
        assert bench.cached(["INJECT it"]) == {}
    finally:
        bench.close()
    assert sorted(w["type"] for w in out.warnings) == [MARKUP_MISMATCH, "truncated"]


def test_outer_whitespace_is_kept_when_flagged() -> None:
    bench = ChunkRun(appending("INJECT", "<script>x()</script>"))
    try:
        out = bench.run(["  INJECT it\n", "INJECT it"])
        assert bench.cached(["INJECT it"]) == {}
    finally:
        bench.close()
    assert [o.translation for o in out] == [
        "  INJECT it<script>x()</script>\n",
        "INJECT it<script>x()</script>",
    ]
    assert [[w["type"] for w in o.warnings] for o in out] == [[MARKUP_MISMATCH]] * 2
    assert bench.engine.texts == ["INJECT it"]  # type: ignore[attr-defined]


def test_injected_markup_in_a_text_with_protected_spans() -> None:
    # the spans go to the engine as <xN/> tags: they are no markup, and they come back
    bench = ChunkRun(appending("INJECT", '<img src=x onerror="alert(1)">'))
    try:
        (clean, flagged) = bench.run(
            ["See https://a.example/p for {name}", "INJECT https://a.example/p"]
        )
    finally:
        bench.close()
    assert clean.translation == "See https://a.example/p for {name}" and clean.warnings == []
    assert flagged.translation == 'INJECT https://a.example/p<img src=x onerror="alert(1)">'
    assert [w["type"] for w in flagged.warnings] == [MARKUP_MISMATCH]
    assert "onerror=" in flagged.warnings[0]["message"]
