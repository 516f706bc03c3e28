"""``POST /v2/write/rephrase`` and ``POST /v2/write/correct``: DeepL Write (the official
client's ``DeepLClient.rephrase_text`` and ``correct_text``), over the drop-in path
(:func:`mtfleet.api.dropin.translate`), as ``/v2/translate`` is.

Each text is one segment of one job whose source and target are the text's language and whose
guidance is a :class:`~mtfleet.core.guidance.Writing` (the task, the writing style or tone,
the regional variant): a pool whose engine follows instructions (an LLM) takes it
(:meth:`mtfleet.api.routing.Routing.route_writing`), and its prompt asks the model to improve
the text rather than translate it (:func:`mtfleet.workers.prompts.instruction`). A fleet
without such a pool answers 400 with a sentence saying so. ``target_lang`` omitted: the texts'
language is detected among those the LLM pools write.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mtfleet.api import dropin
from mtfleet.api.deepl import languages
from mtfleet.api.deepl.auth import DeepLCaller
from mtfleet.api.deepl.errors import Route
from mtfleet.api.deepl.params import MAX_TEXTS, fields, parse
from mtfleet.api.deps import ServicesDep
from mtfleet.core.errors import InvalidInput, TooLarge, UnsupportedLanguage
from mtfleet.core.guidance import VARIANTS, Tone, WriteTask, Writing, WritingStyle
from mtfleet.formats.fragments import Cutting

router = APIRouter(prefix="/v2/write", tags=["deepl"], route_class=Route)

#: Each text whole, one segment: an LLM improves a paragraph as a paragraph.
WHOLE = Cutting(markup="text", split="0")


class WriteIn(BaseModel):
    """``POST /v2/write/rephrase`` and ``/v2/write/correct``; unknown parameters are ignored,
    as DeepL does."""

    model_config = ConfigDict(extra="ignore")

    text: list[str] = Field(min_length=1)
    target_lang: str | None = Field(None, min_length=2, max_length=16)
    writing_style: WritingStyle | None = None
    tone: Tone | None = None

    @field_validator("text", mode="before")
    @classmethod
    def _texts(cls, v: Any) -> Any:
        texts = [v] if isinstance(v, str) else v
        if isinstance(texts, list) and len(texts) > MAX_TEXTS:
            raise TooLarge(f"{len(texts)} texts in one request; the limit is {MAX_TEXTS}")
        return texts

    @field_validator("target_lang", "writing_style", "tone", mode="before")
    @classmethod
    def _blank(cls, v: Any) -> Any:
        return None if v == "" else v


@router.post("/rephrase")
async def rephrase(request: Request, services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    """DeepL's ``/v2/write/rephrase`` (``rephrase_text``): see docs/deepl.md."""
    return await _improve(request, services, caller, "rephrase")


@router.post("/correct")
async def correct(request: Request, services: ServicesDep, caller: DeepLCaller) -> JSONResponse:
    """DeepL's ``/v2/write/correct`` (``correct_text``): see docs/deepl.md."""
    return await _improve(request, services, caller, "correct")


async def _improve(
    request: Request, services: ServicesDep, caller: DeepLCaller, task: WriteTask
) -> JSONResponse:
    req = parse(WriteIn, await fields(request))
    writing = _writing(req, task)
    written = await services.jobs.routing.writers()  # 400 on a fleet without an LLM pool
    if req.target_lang:
        lang = languages.to_fleet(req.target_lang)
    else:
        lang = await run_in_threadpool(_detect, services, caller.owner, req.text, written)
    done = await dropin.translate(
        services,
        caller,
        dropin.TextsRequest(req.text, lang, lang, WHOLE, guidance={"writing": writing}),
        surface="deepl",
        request={"write": task, **req.model_dump(mode="json")},
        wait_s=services.settings.api.deepl_wait_s,
    )
    target = req.target_lang or languages.glossary_code(lang)
    return JSONResponse(
        {
            "improvements": [
                {
                    "text": t.text,
                    "target_language": target,
                    "detected_source_language": languages.glossary_code(t.source or lang),
                }
                for t in done
            ]
        }
    )


def _writing(req: WriteIn, task: WriteTask) -> Writing:
    """What the job asks of the model: ``correct`` takes no style or tone (DeepL's client
    sends none); both at once is a 400, as on DeepL."""
    variant = next((v for v in VARIANTS if v.lower() == (req.target_lang or "").lower()), None)
    try:
        if task == "correct":
            return Writing(task=task, variant=variant)
        return Writing(
            task=task,
            writing_style=req.writing_style or "default",
            tone=req.tone or "default",
            variant=variant,
        )
    except ValidationError as exc:
        msg = "; ".join(str(e.get("msg", "")).removeprefix("Value error, ") for e in exc.errors())
        raise InvalidInput(msg) from exc


def _detect(services: ServicesDep, owner: str, texts: list[str], written: dict[str, Any]) -> str:
    """The texts' language among those the LLM pools write (within the key's share of
    detection, as ``source_lang: auto`` is)."""
    try:
        return services.jobs.detector.each(texts, set(written), "", owner).source
    except UnsupportedLanguage as exc:
        found = exc.details.get("detected", "another language")
        raise UnsupportedLanguage(
            f"the text is in {found}, which no pool whose engine follows instructions writes; "
            f"they write: {', '.join(sorted(written))}. Give target_lang if the detection is "
            "wrong",
            detected=found,
        ) from None
