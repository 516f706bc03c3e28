"""What a request tells an LLM besides the text: ``context``, ``custom_instructions`` and
``formality`` (DeepL's names and semantics), carried with the job to the worker, put in the
prompt by :mod:`mtfleet.workers.prompts`, and part of the phrase-cache key.

* ``context``: text that informs the translation and is neither translated nor billed (the
  page a string sits on, the product it names, the previous message). Any engine takes it; one
  that cannot read it (Apertium, Marian) translates as without it.
* ``custom_instructions``: up to 10 instructions of up to 300 characters ("Use British
  spelling", "Keep product names in English"). Only an engine that follows instructions (an
  LLM: ``vllm``, ``openai``, a causal ``transformers`` model) takes them; another refuses the
  request with a 400 naming its pool and engine, never drops them silently.
* ``formality``: ``default``, ``more``, ``less`` (an instruction, in the target language's
  terms: German *Sie*/*du*, French *vous*/*tu*...), ``prefer_more``, ``prefer_less`` (the same
  where the engine can follow it, nothing where it cannot: DeepL's semantics).
* ``writing`` (:class:`Writing`): the text is improved in its own language instead of
  translated (DeepL Write's ``rephrase``, in a writing style or tone, and ``correct``). Only an
  engine that follows instructions takes it.

:func:`cache_variant` folds all of it (and the glossary's version) into the one string the
phrase cache keys on: a translation made with one context or instruction set is never served
for another.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mtfleet.core import languages
from mtfleet.core.patterns import digest

Formality = Literal["default", "more", "less", "prefer_more", "prefer_less"]
#: DeepL Write's tasks: ``rephrase`` improves a text (``/v2/write/rephrase``), ``correct``
#: fixes its spelling, grammar and punctuation only (``/v2/write/correct``).
WriteTask = Literal["rephrase", "correct"]
WritingStyle = Literal[
    "default", "simple", "business", "academic", "casual",
    "prefer_simple", "prefer_business", "prefer_academic", "prefer_casual",
]  # fmt: skip
Tone = Literal[
    "default", "enthusiastic", "friendly", "confident", "diplomatic",
    "prefer_enthusiastic", "prefer_friendly", "prefer_confident", "prefer_diplomatic",
]  # fmt: skip
#: The regional variants a text can be written in (DeepL Write's target codes), as a sentence.
VARIANTS = {
    "en-GB": "Write in British English (its spelling and vocabulary).",
    "en-US": "Write in American English (its spelling and vocabulary).",
    "pt-BR": "Write in Brazilian Portuguese.",
    "pt-PT": "Write in European Portuguese.",
}

#: Characters of ``context`` a request may carry (a few paragraphs; it goes in every prompt).
MAX_CONTEXT_CHARS = 4000
#: DeepL's limits on ``custom_instructions``.
MAX_INSTRUCTIONS = 10
MAX_INSTRUCTION_CHARS = 300


class Writing(BaseModel):
    """A text to improve in its own language rather than translate (DeepL Write): the job's
    source and target are the text's language, and the prompt asks an LLM to ``rephrase`` it
    (in a ``writing_style`` or a ``tone``, not both, as DeepL) or to ``correct`` it;
    ``variant``: a regional variant to write it in (``en-GB``...). Only an engine that follows
    instructions takes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: WriteTask = Field(
        description="rephrase (improve the text: spelling, grammar, clarity, style) or correct "
        "(spelling, grammar and punctuation only)."
    )
    writing_style: WritingStyle = Field(
        "default", description="DeepL's writing styles (rephrase only); prefer_X is X here."
    )
    tone: Tone = Field("default", description="DeepL's tones (rephrase only); prefer_X is X.")
    variant: Literal["en-GB", "en-US", "pt-BR", "pt-PT"] | None = Field(
        None, description="A regional variant to write the text in."
    )

    @model_validator(mode="after")
    def _one_of(self) -> Writing:
        if self.writing_style != "default" and self.tone != "default":
            raise ValueError("give writing_style or tone, not both")
        if self.task == "correct" and (self.writing_style != "default" or self.tone != "default"):
            raise ValueError("correct takes no writing_style or tone (rephrase does)")
        return self

    def instructions(self) -> list[str]:
        """The style's, the tone's and the variant's sentences (an LLM follows a style in any
        language: a ``prefer_`` style is the style itself)."""
        out = []
        style = self.writing_style.removeprefix("prefer_")
        if style in _STYLE_SENTENCES:
            out.append(_STYLE_SENTENCES[style])
        tone = self.tone.removeprefix("prefer_")
        if tone in _TONE_SENTENCES:
            out.append(_TONE_SENTENCES[tone])
        if self.variant is not None:
            out.append(VARIANTS[self.variant])
        return out


_STYLE_SENTENCES = {
    "simple": "Write in a simple style: short sentences and everyday words.",
    "business": "Write in a business style: clear, precise and professional.",
    "academic": "Write in an academic style: precise, formal and objective.",
    "casual": "Write in a casual style: relaxed and conversational.",
}
_TONE_SENTENCES = {
    "enthusiastic": "Use an enthusiastic tone: energetic and positive.",
    "friendly": "Use a friendly tone: warm and approachable.",
    "confident": "Use a confident tone: assured and direct.",
    "diplomatic": "Use a diplomatic tone: tactful and considerate.",
}


class Guidance(BaseModel):
    """The prompt-shaping fields of one job (all optional; an empty one is no guidance);
    frozen and hashable, as the engine requests that carry it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context: str | None = Field(
        None,
        max_length=MAX_CONTEXT_CHARS,
        description="Text that informs the translation (where the text appears, what it is "
        "about); not translated, not billed. Any engine takes it; an LLM reads it.",
    )
    custom_instructions: tuple[str, ...] = Field(
        (),
        max_length=MAX_INSTRUCTIONS,
        description=f"Up to {MAX_INSTRUCTIONS} instructions of up to {MAX_INSTRUCTION_CHARS} "
        "characters for an LLM engine ('Use British spelling'); an engine that cannot follow "
        "instructions refuses them (400).",
    )
    formality: Formality = Field(
        "default",
        description="more or less formal: an instruction for an LLM engine (another engine "
        "refuses it, 400); prefer_more and prefer_less ask for it where the engine can.",
    )
    #: Instructions from a stored style rule (``style_id``), after the request's own.
    style_instructions: tuple[str, ...] = ()
    #: Pairs of a translation memory similar to the segment (source, target), best first:
    #: examples for the model (one segment's; the worker adds them, :class:`MemoryRef`).
    examples: tuple[tuple[str, str], ...] = ()
    #: A translation memory's match for the segment at or above the threshold but not exact
    #: (source, target): the translation the model edits into the segment's (a fuzzy-match
    #: repair; the worker adds it, :class:`MemoryRef`).
    memory_match: tuple[str, str] | None = None
    #: The other sentences of the segment's unit near it (a document segment's; the API
    #: chooses them, :func:`mtfleet.formats.pipeline.surrounding`, each chunk segment
    #: carries its own and the worker adds it): context the model reads, not translates.
    neighbours: str | None = None
    #: The glossary's terms found in the segment (source, target), for a model that takes
    #: terminology in its prompt (``MT_GLOSSARY_IN_PROMPT``; the worker adds them).
    terms: tuple[tuple[str, str], ...] = ()
    #: The text is to be improved in its own language, not translated (DeepL Write): the
    #: prompt is :func:`mtfleet.workers.prompts.instruction`'s improvement prompt.
    writing: Writing | None = None

    @field_validator("custom_instructions")
    @classmethod
    def _instructions(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for i, text in enumerate(v):
            text = text.strip()
            if not text:
                raise ValueError(f"custom_instructions[{i}] is empty")
            if len(text) > MAX_INSTRUCTION_CHARS:
                raise ValueError(
                    f"custom_instructions[{i}] has {len(text)} characters; the limit is "
                    f"{MAX_INSTRUCTION_CHARS}"
                )
            out.append(text)
        return tuple(out)

    @field_validator("context")
    @classmethod
    def _context(cls, v: str | None) -> str | None:
        return v if v and v.strip() else None

    @property
    def empty(self) -> bool:
        return (
            self.context is None
            and not self.custom_instructions
            and not self.style_instructions
            and not self.examples
            and self.memory_match is None
            and self.neighbours is None
            and not self.terms
            and self.formality == "default"
            and self.writing is None
        )

    @property
    def needs_instructions(self) -> bool:
        """Whether only an engine that follows instructions may take the request (the
        instructions, a style rule, ``more`` or ``less``; ``prefer_`` formality and context
        are taken by any engine; a text to improve, :class:`Writing`, needs one too)."""
        if self.writing is not None:
            return True
        return bool(self.custom_instructions or self.style_instructions) or self.formality in (
            "more",
            "less",
        )

    def for_engine(self, follows_instructions: bool) -> Guidance | None:
        """What an engine gets: everything, for one that follows instructions; nothing, for
        another (it cannot read a context, and a ``prefer_`` formality is dropped as DeepL
        drops it where a language has none: its translations are those made without, and
        share their phrase-cache entries). None when nothing is left."""
        return None if self.empty or not follows_instructions else self

    @property
    def key(self) -> str:
        """A short digest of everything that shapes the prompt (the phrase cache's)."""
        canon = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canon.encode()).hexdigest()[:16]


class MemoryRef(BaseModel):
    """The translation memory a job names (``translation_memory_id``), as its chunks carry it
    to the worker: a segment that is a stored source once its placeables are carried over gets
    the stored target with them (:meth:`mtfleet.core.tm.TMIndex.exact`); another pair scoring
    at least ``threshold`` is, with ``examples`` (an engine that follows instructions), the
    translation the model edits, and otherwise named in a warning beside the engine's; below
    it, with ``examples``, the ``k`` most similar pairs go to the prompt."""

    model_config = ConfigDict(frozen=True)

    id: str
    version: str
    threshold: int = Field(75, ge=0, le=100)
    examples: bool = False
    k: int = Field(5, ge=0, le=20)

    @property
    def key(self) -> str:
        return f"{self.version}.{self.threshold}{'e' if self.examples else ''}"


def cache_variant(
    glossary_version: str | None,
    guidance: Guidance | None,
    memory: MemoryRef | None = None,
    patterns: Sequence[str] | None = None,
) -> str | None:
    """The phrase cache's variant of a job's translations (its ``glossary`` key part): the
    glossary's version, the guidance's digest, the memory's version (with its threshold:
    what the engine was given depends on both) and the digest of the request's protected
    patterns; None for a job with none of them (the shared entries of plain translations)."""
    parts = []
    if guidance is not None and not guidance.empty:
        parts.append(f"g{guidance.key}")
    if memory is not None:
        parts.append(f"m{memory.key}")
    if patterns:
        parts.append(f"p{digest(patterns)}")
    if not parts:
        return glossary_version
    return f"{glossary_version or '-'}+" + "+".join(parts)


#: Formal and informal address by target language: (formal, informal), as a translator would
#: name them. Languages without a T-V distinction get a register instruction instead.
_ADDRESS: dict[str, tuple[str, str]] = {
    "de": ("the formal address (Sie)", "the informal address (du)"),
    "fr": ("the formal address (vous)", "the informal address (tu)"),
    "es": ("the formal address (usted)", "the informal address (tú)"),
    "it": ("the formal address (Lei)", "the informal address (tu)"),
    "pt": ("the formal address (o senhor / a senhora)", "the informal address (você)"),
    "nl": ("the formal address (u)", "the informal address (jij)"),
    "pl": ("the formal address (Pan / Pani)", "the informal address (ty)"),
    "ru": ("the formal address (вы)", "the informal address (ты)"),
    "uk": ("the formal address (ви)", "the informal address (ти)"),
    "cs": ("the formal address (vy)", "the informal address (ty)"),
    "tr": ("the formal address (siz)", "the informal address (sen)"),
    "ja": ("polite language (敬語, です/ます)", "casual language (plain form)"),
    "ko": ("polite speech (존댓말)", "casual speech (반말)"),
}


def formality_instruction(target: str, formality: Formality) -> str | None:
    """The instruction ``formality`` is for ``target`` (None for ``default``)."""
    if formality == "default":
        return None
    formal = formality in ("more", "prefer_more")
    lang = languages.get(target)
    address = _ADDRESS.get(target.split("-")[0])
    if address is not None:
        return f"Use {address[0] if formal else address[1]} throughout the {lang.english} text."
    return "Write in a formal register." if formal else "Write in an informal, casual register."
