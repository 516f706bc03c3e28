"""Quality estimation's parts on their own: the MetricX-style scorer read from the tiny model
``make test`` generates (its score row is fitted to known pairs, so the scale, the clipping and
the direction are checkable), the chunk path's step that attaches scores and warnings, and the
review marks PO and XLIFF downloads carry."""

from __future__ import annotations

from typing import Any

import polib
import pytest
from lxml import etree

from mtfleet import formats as documents
from mtfleet.core.models import SegmentOutcome
from mtfleet.core.settings.quality import QualitySettings
from mtfleet.workers.quality import (
    SCORE_MAX,
    SCORE_MIN,
    SCORE_TOKEN_ID,
    QualityEstimator,
    QualityStep,
    clip,
)
from tests.conftest import metricx_calibration, tiny_seq2seq


@pytest.fixture(scope="module")
def scorer() -> QualityEstimator:
    estimator = QualityEstimator(tiny_seq2seq("metricx"), batch_size=3)
    estimator.load()
    return estimator


def test_the_score_is_the_fitted_logit_clipped_to_metricx_scale(scorer: QualityEstimator) -> None:
    pairs, raw = metricx_calibration()
    got = scorer.score(pairs)
    assert len(got) == len(pairs)
    assert got == pytest.approx([clip(r) for r in raw], abs=0.01)
    assert min(raw) < SCORE_MIN and min(got) == SCORE_MIN  # clipped at both ends
    assert max(raw) > SCORE_MAX and max(got) == SCORE_MAX


def test_lower_is_better_a_sentence_with_its_own_translation_scores_below_a_wrong_one(
    scorer: QualityEstimator,
) -> None:
    pairs, _ = metricx_calibration()
    half = len(pairs) // 2
    good, bad = scorer.score(pairs[:half]), scorer.score(pairs[half:])
    assert max(good) < min(bad)
    step = QualityStep(QualitySettings(qe_threshold=12.5), "cpu", scorer)
    outcomes = [(n, SegmentOutcome(translation=hyp)) for n, (_src, hyp) in enumerate(pairs)]
    done = step.apply(outcomes, {n: src for n, (src, _hyp) in enumerate(pairs)})
    low = [any(w["type"] == "low_quality" for w in o.warnings) for _, o in done]
    assert low == [False] * half + [True] * (len(pairs) - half)


def test_batches_and_padding_do_not_change_a_score(scorer: QualityEstimator) -> None:
    pairs, _ = metricx_calibration()
    one_by_one = [scorer.score([p])[0] for p in pairs]
    assert scorer.score(list(reversed(pairs))) == pytest.approx(
        list(reversed(one_by_one)), abs=0.01
    )
    assert scorer.score([]) == []


def test_a_model_without_metricx_score_id_is_refused_at_load() -> None:
    estimator = QualityEstimator(tiny_seq2seq("marian"))
    with pytest.raises(ValueError, match=str(SCORE_TOKEN_ID)):
        estimator.load()


def test_a_worker_without_a_model_says_each_translation_is_unscored() -> None:
    step = QualityStep(QualitySettings(), "plain")
    failed = SegmentOutcome(error={"type": "engine_error", "message": "no"})
    done = step.apply([(0, SegmentOutcome(translation="Hola")), (1, failed)], {0: "Hi", 1: "x"})
    first = done[0][1]
    assert first.quality is None
    assert [w["type"] for w in first.warnings] == ["quality_unscored"]
    assert "MT_QE_MODEL" in first.warnings[0]["message"] and "plain" in first.warnings[0]["message"]
    assert done[1][1] == failed  # an error is not a translation to score


class Broken:
    model_name = "broken"

    def score(self, pairs: Any) -> list[float]:
        raise RuntimeError("CUDA out of memory")


def test_a_scoring_failure_leaves_the_translations_with_the_reason() -> None:
    step = QualityStep(QualitySettings(), "cpu", Broken())  # type: ignore[arg-type]
    done = step.apply([(0, SegmentOutcome(translation="Hola"))], {0: "Hi"})
    (warning,) = done[0][1].warnings
    assert warning["type"] == "quality_unscored" and "CUDA out of memory" in warning["message"]
    assert done[0][1].translation == "Hola"


PO = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

# a translator's note
#: a.py:1
#| msgid "Add to bag"
msgid "Add to cart"
msgstr ""

#: a.py:2
#, python-format
msgid "Delete %s"
msgstr ""

msgctxt "menu"
msgid "Cancel"
msgstr ""

msgid "Open"
msgstr ""
"""


def test_po_entries_to_review_are_marked_fuzzy_where_gettext_puts_flags() -> None:
    fmt = documents.for_name("po")
    out = fmt.render_result(
        PO.encode(), ["Añadir", "Eliminar %s", "Anular", "Abrir"], {3}, review={0, 1, 2, 3}
    ).content.decode()
    assert '#: a.py:1\n#, fuzzy\n#| msgid "Add to bag"\nmsgid "Add to cart"' in out
    assert "#, fuzzy, python-format\n" in out
    assert '#, fuzzy\nmsgctxt "menu"' in out
    entries = {e.msgid: e for e in polib.pofile(out)}
    assert entries["Add to cart"].fuzzy and entries["Cancel"].fuzzy
    assert entries["Delete %s"].flags == ["fuzzy", "python-format"]
    # untranslated wins: an empty msgstr is not a fuzzy translation
    assert entries["Open"].msgstr == "" and not entries["Open"].fuzzy
    plain = fmt.render_result(PO.encode(), ["Añadir", "Eliminar %s", "Anular", "Abrir"])
    assert "fuzzy" not in plain.content.decode()


XLIFF_2 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="en">
  <file id="f1">
    <unit id="u1"><segment><source>Add to cart</source></segment></unit>
    <unit id="u2"><segment><source>Cancel</source></segment></unit>
  </file>
</xliff>
"""


def test_xliff_2_segments_to_review_carry_a_substate() -> None:
    fmt = documents.for_name("xliff")
    out = fmt.render_result(XLIFF_2.encode(), ["Añadir", "Anular"], review={1}).content
    ns = {"x": "urn:oasis:names:tc:xliff:document:2.0"}
    segments = etree.fromstring(out).findall(".//x:segment", ns)
    assert [s.get("state") for s in segments] == ["translated", "translated"]
    assert [s.get("subState") for s in segments] == [None, "mtfleet:needs-review"]
