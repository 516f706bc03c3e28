"""The contract every document format implements, and the inline tags segments carry.

A document is cut into *units* (a paragraph, a table cell, a JSON string value, a subtitle cue,
an XLIFF source...): the text a translator sees as one piece. Markup *inside* a unit (``<b>``,
a link, a DOCX run with its own formatting, a ``{name}`` placeholder) is carried as inline tags
the engine is asked to keep, and restored afterwards:

* ``<xN/>`` a standalone code (a void element such as ``<br/>``, an image, a protected span
  such as a URL or ``{count}``): the original text of code N goes back in its place;
* ``<gN>`` ... ``</gN>`` a paired code around translatable text (``<b>…</b>``, ``<a href>…</a>``,
  a DOCX run): the opening and closing markup of code N go back around whatever the
  translation put between them.

Tags are numbered from 1 within a unit. A literal ``<x1/>`` or ``<g1>`` already in a document's
text is itself turned into a standalone code, so the engine never sees an ambiguous tag.

The contract: ``render(content, [u.text for u in extract(content)])`` gives back ``content``
exactly (byte-equal; for HTML and XML formats, an equal tree). The round-trip property test
in ``tests/unit/test_documents_roundtrip.py`` checks it on a corpus of realistic files per
format.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import ClassVar

from mtfleet.core.errors import InvalidInput

#: Any inline tag: group 1 "/" for a closing tag, group 2 "x" or "g", group 3 the number,
#: group 4 "/" for a standalone tag.
TAG = re.compile(r"<(/?)([xg])([1-9][0-9]{0,4})(/?)>")

#: Inline codes one unit may carry (tags are numbered up to 99,999; a real paragraph has tens).
MAX_CODES_PER_UNIT = 2_000
#: Paired codes one unit may nest (bold inside a link inside a span... real text nests a few).
MAX_NESTING = 64


def x(n: int) -> str:
    """Standalone tag for code ``n``."""
    return f"<x{n}/>"


def g_open(n: int) -> str:
    return f"<g{n}>"


def g_close(n: int) -> str:
    return f"</g{n}>"


@dataclass(frozen=True)
class Code:
    """What an inline tag stands for: ``start`` (a standalone code's text, or a paired code's
    opening markup) and ``end`` (a paired code's closing markup; None for standalone)."""

    start: str
    end: str | None = None

    @property
    def paired(self) -> bool:
        return self.end is not None


@dataclass
class Unit:
    """One translatable piece of a document: ``text`` with inline tags, the codes they stand
    for, and where it sits (``path``, for messages and for the formats' own bookkeeping).

    Each unit made counts against the budget of the extraction under way, if any
    (:func:`unit_budget`): a document far over what one job may carry is refused while it is
    read, not after."""

    text: str
    codes: dict[int, Code] = field(default_factory=dict)
    path: str = ""

    def __post_init__(self) -> None:
        budget = _budget.get()
        if budget is not None:
            budget.spend()


class DocumentError(InvalidInput):
    """The document cannot be parsed as the format it claims (HTTP 422)."""

    code = "invalid_document"


#: A document error's message at most, in characters (a parser's message may quote the input
#: whole: polib's quoted a 3 MB keyword), and one word of it (an excerpt of the input).
MESSAGE_CHARS = 300
EXCERPT_CHARS = 40


def _short(message: str) -> str:
    """``message`` on one line, each word (an excerpt of the input) cut to
    :data:`EXCERPT_CHARS` and the whole to :data:`MESSAGE_CHARS`, a cut marked ``…``."""
    words = [w if len(w) <= EXCERPT_CHARS else w[:EXCERPT_CHARS] + "…" for w in message.split()]
    text = " ".join(words)
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1].rstrip() + "…"


@contextmanager
def reading(name: str, noun: str = "document") -> Iterator[None]:
    """Read or render a ``name`` document (a format's name; a request's ``html`` text: ``noun``
    "text"): whatever fails in the block comes out as the DocumentError its caller reads,
    phrased here and nowhere else (the document processes run every format's extract and
    render in it). The message is one short sentence naming the format, with the line or
    position where the parser gave one and at most a short excerpt of the input; a parser's
    own exception becomes such a sentence too, never a 500; MemoryError passes (the document
    processes answer it)."""
    what = f"the {name} {noun}"
    try:
        yield
    except MemoryError:
        raise
    except DocumentError as exc:
        message = exc.message
        if type(exc) is DocumentError and not re.search(rf"\b{re.escape(name)}\b", message, re.I):
            message = f"{what}: {message}"
        raise type(exc)(_short(message), **exc.details) from None
    except RecursionError:
        raise DocumentError(f"{what} nests too deeply to be read") from None
    except Exception as exc:  # noqa: BLE001 - a parser's failure is the document's refusal
        raise DocumentError(_short(f"{what} cannot be read: {exc or type(exc).__name__}")) from None


class DocumentTooLarge(DocumentError):
    """A document with more sentences than one job may carry, refused as soon as that is
    known (HTTP 422)."""

    code = "document_too_large"


@dataclass
class _Budget:
    units: int
    segments: int  # what one job may carry (for the message)

    def spend(self) -> None:
        self.units -= 1
        if self.units < 0:
            raise too_large(self.segments, f"more than {self.segments}")


def too_large(limit: int, found: int | str) -> DocumentTooLarge:
    return DocumentTooLarge(
        f"the document has {found} sentences; one job may carry {limit} "
        "(MT_MAX_SEGMENTS_PER_JOB): split the file, or ask the operator to raise the limit",
        limit=limit,
    )


_budget: ContextVar[_Budget | None] = ContextVar("mtfleet_unit_budget", default=None)

#: Units an extraction may make per sentence one job may carry: units with nothing to
#: translate (a cue of "♪", a cell holding a number) make no sentence, so a few more are let in.
UNITS_PER_SEGMENT = 2


@contextmanager
def unit_budget(max_segments: int) -> Iterator[None]:
    """Within the block, making more than ``UNITS_PER_SEGMENT * max_segments`` units raises
    :class:`DocumentTooLarge` (formats make units as they read: the reading stops there)."""
    token = _budget.set(_Budget(UNITS_PER_SEGMENT * max_segments, max_segments))
    try:
        yield
    finally:
        _budget.reset(token)


class DocumentFormat(ABC):
    """A file format: cut into units, and put translated units back. The one contract every
    format implements:

    * it names itself: ``name`` (the API's ``{"document": {"format": name}}``), ``extensions``,
      ``binary`` and ``media_type``;
    * :meth:`extract` gives the units, deterministically; content that is not this format is a
      :class:`DocumentError`, phrased in :func:`reading`;
    * :meth:`render` puts translations back, every code restored once (:func:`restore`), and
      the round trip ``render(content, [u.text for u in extract(content)])`` is ``content``;
    * :meth:`open` and :meth:`render_result` have defaults: a format overrides them to read a
      file once, or to say in the file that a unit is untranslated or to review.

    A format's module ends with ``register(TheFormat())`` and is named in
    :data:`mtfleet.formats.MODULES` (``tests/unit/test_formats_contract.py`` finds any left
    out)."""

    #: Name used in the API (``{"document": {"format": name}}``).
    name: ClassVar[str]
    #: File extensions (lower case, with the dot) the CLI maps to this format.
    extensions: ClassVar[tuple[str, ...]]
    #: Binary formats travel base64-encoded in JSON.
    binary: ClassVar[bool] = False
    media_type: ClassVar[str] = "text/plain; charset=utf-8"

    @abstractmethod
    def extract(self, content: bytes) -> list[Unit]:
        """The document's translatable units, in document order. Raises DocumentError for
        content that is not this format. Must be deterministic: ``render`` extracts again."""

    def open(self, content: bytes) -> Opened:
        """The document read once, for a job's result: its units and the render of their
        translations (:class:`Opened`). A format whose reading is costly (a ZIP of XML parts)
        keeps what it parsed for the render; by default the render reads ``content`` again
        (:meth:`render_result`)."""

        def render(
            translations: Sequence[str],
            untranslated: AbstractSet[int],
            target_lang: str | None,
            review: AbstractSet[int] = frozenset(),
        ) -> Rendered:
            return self.render_result(
                content, translations, untranslated, target_lang=target_lang, review=review
            )

        return Opened(self.extract(content), render)

    @abstractmethod
    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        """``content`` with unit i's text replaced by ``translations[i]`` (tagged text, as
        returned by the engine: tags may be missing, repeated or moved; every code must still
        be restored once, see :func:`restore`). ``target_lang``: for formats that record the
        language of their translations (XLIFF); others ignore it."""

    def render_result(
        self,
        content: bytes,
        translations: Sequence[str],
        untranslated: AbstractSet[int] = frozenset(),
        *,
        target_lang: str | None = None,
        review: AbstractSet[int] = frozenset(),
    ) -> Rendered:
        """What a job's result gets (the one place a format decides what a missing translation
        becomes): the file as :meth:`render` makes it, where ``untranslated`` names the units
        a sentence of which has no translation (it failed, or an output check withheld it;
        ``translations`` hold that sentence in the source language). Most formats keep it so:
        nothing of the document is lost, and the file has no way to say "not translated". A
        format that has one overrides this (gettext: an empty ``msgstr``), so the source is
        never shipped as a translation; it may also say what it had to guess in the file.
        ``review`` names the units a sentence of which a translator should review (its
        quality estimate was low): a format with a way to say so marks them (gettext:
        ``#, fuzzy``; XLIFF: ``needs-review-translation``); the others cannot."""
        return Rendered(self.render(content, translations, target_lang=target_lang))


@dataclass
class Rendered:
    """A rendered file and what the format had to guess or repair in it (for the result's
    ``warnings``)."""

    content: bytes
    warnings: list[str] = field(default_factory=list)


@dataclass
class Opened:
    """A document read once (:meth:`DocumentFormat.open`): ``units`` as ``extract`` gives
    them, and ``render(translations, untranslated, target_lang, review)`` as :meth:`render_result`
    gives the file for the same content. The render may be called once: it may rebuild the
    parts it read in place."""

    units: list[Unit]
    render: Callable[[Sequence[str], AbstractSet[int], str | None, AbstractSet[int]], Rendered]


@dataclass
class Restored:
    """A translated unit with its codes put back, and what went wrong doing it."""

    text: str
    warnings: list[str] = field(default_factory=list)


def restore(
    translation: str,
    codes: dict[int, Code],
    escape: object = None,
    *,
    keep_other: bool = False,
) -> Restored:
    """Put codes back into a tagged translation.

    Tags for unknown codes are dropped; a code whose tag is missing is appended at the end (a
    paired one around nothing), so no markup and no protected text is ever lost; a code whose
    tag appears twice is restored once (the first time). ``escape`` (a callable, optional) is
    applied to the text between tags: a markup format escapes ``<`` and ``&`` in translated text.
    With ``keep_other``, tags of codes not in ``codes`` are left in place untouched (the
    pipeline restores its protected spans first and leaves the format's own tags to it).
    """
    esc = escape if callable(escape) else (lambda s: s)
    out: list[str] = []
    warnings: list[str] = []
    used: set[int] = set()
    opened: list[int] = []  # the paired codes open now, innermost last
    is_open: set[int] = set()  # the same, for lookups in constant time (linear in the tags)
    pos = 0
    for m in TAG.finditer(translation):
        out.append(esc(translation[pos : m.start()]))
        pos = m.end()
        closing, kind, num, selfclosing = m.group(1), m.group(2), int(m.group(3)), m.group(4)
        code = codes.get(num)
        if code is None and keep_other:
            out.append(m.group(0))
            continue
        if code is None or (kind == "x") == code.paired or (closing and selfclosing):
            warnings.append(f"unknown tag {m.group(0)} dropped")
            continue
        if kind == "x":
            if num in used:
                warnings.append(f"tag {m.group(0)} repeated; kept once")
                continue
            used.add(num)
            out.append(code.start)
        elif not closing:
            if num in used:
                warnings.append(f"tag {m.group(0)} repeated; kept once")
                continue
            used.add(num)
            opened.append(num)
            is_open.add(num)
            out.append(code.start)
        else:
            if num not in is_open:
                warnings.append(f"closing tag {m.group(0)} without its opening tag dropped")
                continue
            # close anything opened inside it first, so markup stays well nested
            while opened:
                inner = opened.pop()
                is_open.discard(inner)
                out.append(codes[inner].end or "")
                if inner == num:
                    break
    out.append(esc(translation[pos:]))
    while opened:
        inner = opened.pop()
        warnings.append(f"tag <g{inner}> not closed; closed at the end")
        out.append(codes[inner].end or "")
    for num in sorted(set(codes) - used):
        code = codes[num]
        warnings.append(f"tag {x(num) if not code.paired else g_open(num)} missing; appended")
        out.append(code.start + (code.end or ""))
    return Restored("".join(out), warnings)


def tag_counts(text: str) -> dict[str, int]:
    """How often each inline tag occurs (the worker's placeholder check compares these)."""
    counts: dict[str, int] = {}
    for m in TAG.finditer(text):
        counts[m.group(0)] = counts.get(m.group(0), 0) + 1
    return counts


class UnitBuilder:
    """Builds a unit's tagged text while a format walks its markup.

    ``text`` adds document text (a literal tag-like string in it becomes a standalone code, so
    it cannot be mistaken for one of ours); ``standalone`` adds a code; ``open``/``close`` wrap
    translatable text in a paired code. ``build`` returns the Unit.
    """

    def __init__(self, path: str = "") -> None:
        self.path = path
        self._parts: list[str] = []
        self._codes: dict[int, Code] = {}
        self._open: list[int] = []

    def _next(self) -> int:
        if len(self._codes) >= MAX_CODES_PER_UNIT:
            raise DocumentError(
                f"{self._where()} carries more than {MAX_CODES_PER_UNIT} pieces of inline markup; "
                "that is the limit"
            )
        return len(self._codes) + 1

    def _where(self) -> str:
        return f"the text at {self.path}" if self.path else "a text of the document"

    def text(self, s: str) -> None:
        pos = 0
        for m in TAG.finditer(s):
            self._parts.append(s[pos : m.start()])
            self.standalone(m.group(0))
            pos = m.end()
        self._parts.append(s[pos:])

    def standalone(self, markup: str) -> int:
        n = self._next()
        self._codes[n] = Code(markup)
        self._parts.append(x(n))
        return n

    def open(self, start: str, end: str) -> int:
        if len(self._open) >= MAX_NESTING:
            raise DocumentError(
                f"{self._where()} nests inline markup more than {MAX_NESTING} levels deep; "
                "that is the limit"
            )
        n = self._next()
        self._codes[n] = Code(start, end)
        self._open.append(n)
        self._parts.append(g_open(n))
        return n

    def close(self) -> None:
        self._parts.append(g_close(self._open.pop()))

    @property
    def empty(self) -> bool:
        """No text at all (only codes and whitespace): nothing to translate."""
        return not TAG.sub("", "".join(self._parts)).strip()

    def build(self) -> Unit:
        while self._open:
            self.close()
        return Unit("".join(self._parts), dict(self._codes), self.path)
