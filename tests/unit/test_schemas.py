"""core/schemas.py: TextsIn / JobCreate refuse what cannot be translated and name the text."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from mtfleet.core.models import Lane
from mtfleet.core.schemas import JobCreate, TextsIn, TranslateCreate


def body(**overrides: Any) -> dict[str, Any]:
    return {"texts": ["Hello"], "source_lang": "en", "target_lang": "es", **overrides}


@pytest.mark.parametrize("model", [TextsIn, JobCreate, TranslateCreate])
def test_valid(model: type[TextsIn]) -> None:
    got = model(**body(texts=["Hello", "tab\there", "two\nlines", "crlf\r\nend", "ñ 中文 😀"]))
    assert got.texts[1] == "tab\there"
    assert got.texts[3] == "crlf\r\nend"


def test_empty_list_refused() -> None:
    with pytest.raises(ValidationError) as info:
        JobCreate(**body(texts=[]))
    assert info.value.errors()[0]["loc"] == ("texts",)


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ("", "empty or whitespace only"),
        ("   \n\t", "empty or whitespace only"),
        ("a\x00b", "control character U+0000"),
        ("bell\x07", "control character U+0007"),
        ("esc\x1b[31m", "control character U+001B"),
        ("del\x7f", "control character U+007F"),
        ("nel\x85", "control character U+0085"),
        ("\ud800", "lone surrogate U+D800"),
        ("x\udfff", "lone surrogate U+DFFF"),
    ],
)
@pytest.mark.parametrize("model", [TextsIn, JobCreate])
def test_bad_text_refused_naming_its_index(model: type[TextsIn], bad: str, words: str) -> None:
    with pytest.raises(ValidationError) as info:
        model(**body(texts=["fine", "also fine", bad]))
    message = str(info.value)
    assert f"texts[2] {'is' if 'empty' in words else 'contains'}" in message
    assert words in message


def test_first_bad_text_is_named() -> None:
    with pytest.raises(ValidationError, match=r"texts\[0\] contains control character U\+0007"):
        JobCreate(**body(texts=["\x07", "\x00"]))


@pytest.mark.parametrize("model", [TextsIn, JobCreate, TranslateCreate])
def test_extra_fields_forbidden(model: type[TextsIn]) -> None:
    with pytest.raises(ValidationError) as info:
        model(**body(tone="formal"))
    assert info.value.errors()[0]["type"] == "extra_forbidden"


@pytest.mark.parametrize("field", ["texts", "target_lang"])
def test_required_fields(field: str) -> None:
    data = body()
    del data[field]
    with pytest.raises(ValidationError):
        JobCreate(**data)


@pytest.mark.parametrize("model", [JobCreate, TranslateCreate])
def test_the_source_language_is_detected_unless_given(model: type[TextsIn]) -> None:
    data = body()
    del data["source_lang"]
    assert model(**data).source_lang == "auto"


@pytest.mark.parametrize("code", ["e", "x" * 17])
def test_language_code_length(code: str) -> None:
    with pytest.raises(ValidationError):
        JobCreate(**body(source_lang=code))


def test_lane() -> None:
    assert JobCreate(**body()).lane is None
    assert JobCreate(**body(lane="bulk")).lane is Lane.bulk
    with pytest.raises(ValidationError):
        JobCreate(**body(lane="fast"))


def test_texts_must_be_strings() -> None:
    with pytest.raises(ValidationError):
        JobCreate(**body(texts=["ok", 3]))


def test_the_sdk_reads_answers_with_the_apis_own_models() -> None:
    """One definition of each public model: the SDK's names are the API's classes, and the
    stored job is the public one plus what only the fleet keeps."""
    from mtfleet.core import schemas
    from mtfleet.core.store import JobRecord
    from mtfleet.producer import client

    assert client.Job is schemas.JobPublic
    assert client.JobResult is schemas.JobResultPublic
    assert client.DocumentResult is schemas.DocumentOut
    assert client.Glossary is schemas.GlossaryDetail
    assert issubclass(JobRecord, schemas.JobPublic)
    assert set(schemas.JobPublic.model_fields) < set(JobRecord.model_fields)
