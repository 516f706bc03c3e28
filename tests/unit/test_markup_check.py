"""workers/translation.py: output whose markup is not a subset of its source's gets a
``markup_mismatch`` warning (delivered, never cached); plain text and the source's own tags pass.

The engine is a small fixture that appends a fixed suffix to chosen segments, as a model talked
into injecting markup by its input would; the code under test is ``translate_isolated`` and the
``markup`` / ``markup_warning`` functions it uses.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from mtfleet.workers.engines.base import Engine, EngineLimits, Translation, TranslationRequest
from mtfleet.workers.translation import MARKUP_MISMATCH, markup, markup_warning, translate_isolated


class AppendingEngine(Engine):
    """Echoes each text; appends ``suffix`` to texts that contain ``marker``."""

    name = "appending"

    def __init__(self, marker: str, suffix: str, *, truncated: bool = False) -> None:
        self.marker, self.suffix, self.truncated = marker, suffix, truncated

    def load(self) -> None:
        pass

    @property
    def model(self) -> str:
        return "appending"

    @property
    def fingerprint(self) -> str:
        return "appending-1"

    @property
    def limits(self) -> EngineLimits:
        return EngineLimits(max_sequences=64, max_batch_tokens=1 << 16, max_input_tokens=1 << 12)

    def pairs(self) -> list[tuple[str, str]]:
        return [("en", "es")]

    def translate(self, requests: Sequence[TranslationRequest]) -> list[Translation]:
        return [
            Translation(
                r.text + (self.suffix if self.marker in r.text else ""), truncated=self.truncated
            )
            for r in requests
        ]


def run(engine: Engine, *texts: str) -> list[dict[str, str] | None]:
    """The markup_mismatch warning (or None) of each text's outcome."""
    outcomes = translate_isolated(engine, [TranslationRequest(t, "en", "es") for t in texts])
    assert all(o.ok for o in outcomes)
    found: list[dict[str, str] | None] = []
    for o in outcomes:
        mismatches = [w for w in o.warnings if w["type"] == MARKUP_MISMATCH]
        assert len(mismatches) <= 1
        found.append(mismatches[0] if mismatches else None)
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
    clean, injected = run(AppendingEngine("INJECT", suffix), "Red shoes", "INJECT Blue shoes")
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
    assert run(AppendingEngine("never", ""), source) == [None]
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
    engine = AppendingEngine("INJECT", "<script>x()</script>", truncated=True)
    out = translate_isolated(engine, [TranslationRequest("INJECT it", "en", "es")])
    assert sorted(w["type"] for w in out[0].warnings) == [MARKUP_MISMATCH, "truncated"]


def test_outer_whitespace_is_kept_when_flagged() -> None:
    engine = AppendingEngine("INJECT", "<script>x()</script>")
    out = translate_isolated(engine, [TranslationRequest("  INJECT it\n", "en", "es")])
    assert out[0].translation == "  INJECT it<script>x()</script>\n"
    assert [w["type"] for w in out[0].warnings] == [MARKUP_MISMATCH]
