"""ICU MessageFormat messages: ``plural``, ``select`` and ``selectordinal`` cut into one unit per
case, and put back together with the target language's plural categories.

Shared by the JSON i18n and ARB formats (each string value is a message) and by XLIFF (a
``<source>`` whose whole content is the text of an ICU message).

What the engine gets
--------------------

A message is read as a tree: text, codes (``#`` inside a plural, and inside a select nested
in one, where some runtimes read it as the number too; simple arguments such as ``{name}`` or
``{amount, number, ::currency/EUR}``; ICU quoted literals such as ``'{'``; whatever else the
calling format calls a code: HTML tags, printf placeholders…) and *complex arguments*
(``{count, plural, one {…} other {…}}``), whose case messages are trees again. Text that is not
ICU (an unclosed brace, a plural without cases) is text; nothing here refuses a message, except
arguments nested more than :data:`MAX_DEPTH` deep (DocumentError).

Each message level is its own unit: the text of one case is one unit (path
``<path>/plural:one``, ``<path>/select:male/plural:other`` when nested), with ``#`` and nested
``{arg}`` as standalone codes, so an engine cannot move words from one case into another or
drop a case; it never sees the skeleton (argument name, keyword, ``offset:``, case keys,
braces). A nested plural or select inside a case is split the same way, recursively.

Text outside a complex argument (``"You have {n, plural, one {# item} other {# items}} in
cart"``) stays one unit of its own, the whole argument one standalone code in it: ``You have
<x1/> in cart``, then ``<x1/> item`` and ``<x1/> items``. The sentence keeps its words together
(an engine can reorder them around the number: Japanese puts it in the middle, German moves the
verb), and the argument is rendered where the translation put the code. The alternative, copying
the outside text into every case (ICU's advice to authors), would rewrite the message's
structure on every render and break the identity round trip; the outer sentence as its own unit
keeps the file as it was and gives the engine whole phrases. A level with no text (a message
that is only a plural, an empty ``other {}``) is no unit and is kept as it was.

What render writes
------------------

With the translations of the units (and ``target`` = None) every level is written as it came,
except the units' text: the same translations give back the same bytes. With a ``target``
language, each ``plural`` (and ``selectordinal``, with ordinal categories) gets exactly the
target's CLDR categories through :func:`mtfleet.formats.plurals.for_target`: explicit
``=0``/``=1`` forms stay, a category the target lacks is dropped, one it has and the source lacks
is made from the translated ``other`` case (``#`` kept), written with the spacing of ``other``'s
key, and so is a case that spells its number (``one {1 item}``: no ``#``, no ``{count}``) where
the target's category covers several numbers (Russian ``one``: 1, 21, 31…). ``select`` cases
are kept as they are (only their text is translated).

Translated text is escaped so it cannot become syntax. With ICU quoting on (JSON and ARB files
that use complex arguments, XLIFF ICU sources), in ICU's DOUBLE_OPTIONAL apostrophe mode (also
formatjs's): braces, and ``#`` in a plural's case, go in a quoted literal (``'{'``); a run of
apostrophes that could open a quote (before such a character, or before a code) is made even,
so ``l'{name}`` is written ``l''{name}``; an apostrophe inside a word (``it's``) is left as it
is. Flutter's ``gen-l10n`` reads apostrophes this way only with ``use-escaping: true``; without
it, the rare doubled apostrophe shows twice (an unescaped one would swallow the placeholder in
every ICU runtime, so ICU's reading wins).

A plural made into the target's categories copies its ``other`` case; plurals nested in
``other`` cases multiply. So a message is refused (DocumentError) when it is read, whatever the
target, if in the categories of a language with all six (Arabic) its source text alone would
render past a quarter of :data:`MAX_RENDERED` characters (:func:`parse`): a file accepted at
upload can be rendered, its translations having room to be four times as long; render itself
stops at :data:`MAX_RENDERED` instead of filling memory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from mtfleet.formats.base import Code, DocumentError, Unit, UnitBuilder, restore
from mtfleet.formats.plurals import CATEGORIES, for_target
from mtfleet.formats.text import pair_tags

#: The ICU argument types whose cases are messages.
COMPLEX = ("plural", "select", "selectordinal")
#: Complex arguments nested deeper than this are refused (real messages nest two or three).
MAX_DEPTH = 32
#: Characters a message's complex arguments may take when rendered (nested ones counted at each
#: level): each plural made into the target's categories copies its ``other`` case, so plurals
#: nested in ``other`` would grow the message geometrically.
MAX_RENDERED = 1_000_000
#: What a message's source text may take when rendered in the most categories a language has
#: (checked when it is read): the rest of :data:`MAX_RENDERED` is room for longer translations.
MAX_READ = MAX_RENDERED // 4

_SPECIAL = "{}#|"
_ARG = re.compile(r"\s*([^\s{},#'][^{},]*)(?:,\s*([A-Za-z]+)\s*(?:,|$))?", re.S)
_SIMPLE = re.compile(r"\s*[\w.-]+\s*(?:,[^{}]*)?")
_CASE_KEY = re.compile(r"\s*(=-?\d+(?:\.\d+)?|[^\s{}=][^\s{}]*)\s*\{")
_OFFSET = re.compile(r"\s*offset\s*:\s*\d+")
_LEAD_SPACE = re.compile(r"\s*")
#: Marks a code in a restored translation (stripped from the translation first).
_MARK = "\x00"
_MARKER = re.compile(r"\x00(\d+)([se]?)\x00")


@dataclass(frozen=True)
class Token:
    """A code: ``kind`` is ``hash`` (``#`` in a plural), ``arg`` (a simple ``{name}``),
    ``quote`` (an ICU quoted literal) or the name of the calling format's regex group that
    matched (``tag`` for markup that pairs)."""

    text: str
    kind: str


@dataclass
class Case:
    """One case of a complex argument: ``lead`` is the source text before its message (white
    space, the key, ``{``); the message ends at the next ``}``."""

    key: str
    lead: str
    body: list[Item]


@dataclass
class Arg:
    """A ``plural``/``select``/``selectordinal`` argument: ``head`` is its text up to the
    first case (``{count, plural,``, an ``offset:1`` included), ``tail`` after the last (``}``
    and any white space before it)."""

    name: str
    kind: str
    head: str
    cases: list[Case]
    tail: str


#: A piece of a message: text (a plain ``str``), a code, or a complex argument.
Item = str | Token | Arg


@dataclass
class Piece:
    """One level of a message (the message itself, or one case's message): its items, the
    unit made of them (None when it has no text), whether it is a case of a plural or
    selectordinal (where ICU reads ``#`` as the number, and ``'#`` opens a quote), and which
    codes of the unit stand for complex arguments."""

    items: list[Item]
    unit: Unit | None
    plural_case: bool
    args: dict[int, Arg] = field(default_factory=dict)


# --- reading ------------------------------------------------------------------------------------


@dataclass
class _Reader:
    s: str
    quoting: bool
    codes: re.Pattern[str] | None
    starts: str
    close: dict[int, int]  # index of a "{" -> index just past its "}"


def _quoted_end(s: str, pos: int, end: int) -> int:
    """ICU quoting: ``'{'`` and ``'{…}'`` are literal text. If a quoted literal starts at
    ``pos``, the index just past it; else -1 (a lone ``'`` or ``''`` is an apostrophe)."""
    if s[pos] != "'" or pos + 1 >= end or s[pos + 1] not in _SPECIAL:
        return -1
    j = pos + 1
    while j < end:
        if s[j] == "'":
            if j + 1 < end and s[j + 1] == "'":
                j += 2
                continue
            return j + 1
        j += 1
    return end


def _braces(s: str, quoting: bool) -> dict[int, int]:
    """Every matched ``{`` of ``s`` → the index just past its ``}``, in one pass (quoted
    literals skipped), so a message with many unmatched braces is read in linear time."""
    out: dict[int, int] = {}
    stack: list[int] = []
    j, n = 0, len(s)
    while j < n:
        c = s[j]
        if quoting and s.startswith("''", j):  # an apostrophe, not a quote
            j += 2
            continue
        if quoting and c == "'":
            q = _quoted_end(s, j, n)
            if q > 0:
                j = q
                continue
        if c == "{":
            stack.append(j)
        elif c == "}" and stack:
            out[stack.pop()] = j + 1
        j += 1
    return out


def parse(
    s: str,
    *,
    quoting: bool,
    codes: re.Pattern[str] | None = None,
    starts: str = "{$%<&",
    in_plural: bool = False,
) -> list[Item]:
    """The message ``s`` as items. ``quoting``: ICU apostrophe quoting applies (``'{'`` is a
    literal brace). ``codes``: the calling format's other codes, tried at the characters of
    ``starts``; a match is a token named by the regex group that matched (``tag`` for markup
    that pairs, see :func:`pieces`). The items' source texts, joined, are ``s`` exactly.
    DocumentError for arguments nested too deep, and for plurals nested so that the message
    could not be rendered in every target's categories (:data:`MAX_READ`)."""
    r = _Reader(s, quoting, codes, starts, _braces(s, quoting))
    items = _items(r, 0, len(s), in_plural, 0)
    _, spent, depth = _worst(items)
    if spent > MAX_READ:
        raise DocumentError(
            f"an ICU message nests plurals {depth} levels deep: in a language with "
            f"{len(CATEGORIES)} plural categories it would grow past {MAX_READ:,} characters "
            "(each made category copies the plural's other case); nest fewer plurals, or split "
            "the message"
        )
    return items


def _worst(items: Sequence[Item]) -> tuple[int, int, int]:
    """What :func:`render` writes for ``items`` at most, from the source text: (the level's
    length, the characters :func:`render` counts against :data:`MAX_RENDERED`, the depth of
    nested plurals), each plural with one case per CLDR category besides its own cases."""
    length = spent = depth = 0
    for item in items:
        if not isinstance(item, Arg):
            length += len(item if isinstance(item, str) else item.text)
            continue
        cases = [(len(c.lead) + 1, *_worst(c.body)) for c in item.cases]
        inner = sum(s for _, _, s, _ in cases)  # each case's arguments are rendered once
        if item.kind != "select":
            # at most one case per category, each its own or a copy of the other case (or of
            # the last): none longer than the longest category case; other cases stay
            categories = [k.key in CATEGORIES for k in item.cases]
            largest = max(
                (c for c, cat in zip(cases, categories, strict=True) if cat), default=cases[-1]
            )
            kept = [c for c, cat in zip(cases, categories, strict=True) if not cat]
            cases = kept + [largest] * len(CATEGORIES)
        own = len(item.head) + len(item.tail) + sum(lead + n for lead, n, _, _ in cases)
        length += own
        spent += own + inner
        depth = max(depth, max(d for _, _, _, d in cases) + (item.kind != "select"))
    return length, spent, depth


def _items(r: _Reader, start: int, end: int, in_plural: bool, depth: int) -> list[Item]:
    s = r.s
    out: list[Item] = []
    pos = text_start = start

    def take(token: Item, upto: int, after: int) -> None:
        nonlocal pos, text_start
        if upto > text_start:
            out.append(s[text_start:upto])
        out.append(token)
        pos = text_start = after

    while pos < end:
        c = s[pos]
        if r.quoting and s.startswith("''", pos, end):  # an apostrophe, not a quote
            pos += 2
            continue
        if r.quoting and c == "'":
            q = _quoted_end(s, pos, end)
            if q > 0:
                take(Token(s[pos:q], "quote"), pos, q)
                continue
        if c == "{" and not s.startswith("{{", pos):
            close = r.close.get(pos, -1)
            if 0 < close <= end:
                arg = _arg(r, pos, close, in_plural, depth)
                if arg is not None:
                    take(arg, pos, close)
                    continue
                if _SIMPLE.fullmatch(s, pos + 1, close - 1):
                    take(Token(s[pos:close], "arg"), pos, close)
                    continue
        elif c == "#" and in_plural:
            take(Token("#", "hash"), pos, pos + 1)
            continue
        if r.codes is not None and c in r.starts:
            m = r.codes.match(s, pos, end)
            if m:
                take(Token(m.group(0), m.lastgroup or "code"), pos, m.end())
                continue
        pos += 1
    if end > text_start:
        out.append(s[text_start:end])
    return out


def _arg(r: _Reader, i: int, end: int, in_plural: bool, depth: int) -> Arg | None:
    """The complex argument ``s[i:end]`` (braces included), or None if it is not one."""
    s = r.s
    m = _ARG.match(s, i + 1, end - 1)
    if not m or m.group(2) is None or m.group(2).lower() not in COMPLEX:
        return None
    pos = m.end()
    off = _OFFSET.match(s, pos, end - 1)
    if off:
        pos = off.end()
    head_end = pos
    spans: list[tuple[str, int, int, int]] = []  # key, lead start, "{" index, "}" + 1
    while True:
        k = _CASE_KEY.match(s, pos, end - 1)
        if not k:
            break
        brace = k.end() - 1
        close = r.close.get(brace, -1)
        if close < 0 or close > end - 1:
            return None
        spans.append((k.group(1), pos, brace, close))
        pos = close
    if not spans or s[pos : end - 1].strip():
        return None
    if depth >= MAX_DEPTH:
        raise DocumentError(
            f"an ICU message nests plural/select arguments more than {MAX_DEPTH} levels deep"
        )
    kind = m.group(2).lower()
    inner = in_plural or kind != "select"
    cases = [
        Case(key, s[a : brace + 1], _items(r, brace + 1, close - 1, inner, depth + 1))
        for key, a, brace, close in spans
    ]
    return Arg(m.group(1).strip(), kind, s[i:head_end], cases, s[pos:end])


def source(items: Sequence[Item]) -> str:
    """The items' source text (``parse``'s input)."""
    return "".join(_source(item) for item in items)


def _source(item: Item) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, Token):
        return item.text
    cases = "".join(c.lead + source(c.body) + "}" for c in item.cases)
    return item.head + cases + item.tail


def has_args(items: Sequence[Item]) -> bool:
    """Whether the message has a plural/select/selectordinal argument."""
    return any(isinstance(item, Arg) for item in items)


def tokens(items: Sequence[Item]) -> Iterator[Token]:
    """Every code of the message, those inside cases included."""
    for item in items:
        if isinstance(item, Token):
            yield item
        elif isinstance(item, Arg):
            for case in item.cases:
                yield from tokens(case.body)


def skeleton(items: Sequence[Item]) -> list[str]:
    """The message's ICU structure (argument names, kinds, case keys, nesting), whatever the
    order of the arguments within one level (a translation may reorder them)."""
    return sorted(
        repr((item.name, item.kind, [(c.key, skeleton(c.body)) for c in item.cases]))
        for item in items
        if isinstance(item, Arg)
    )


# --- units --------------------------------------------------------------------------------------


def pieces(
    items: list[Item],
    path: str,
    *,
    pair: Callable[[str], tuple[bool, str] | None] | None = None,
) -> list[Piece]:
    """The message's levels in document order (the message, then each argument's cases, each
    followed by its own nested cases), each with its unit. ``pair`` names a ``tag`` token
    (``(closing, name)``, or None for markup that does not pair): tags that match within one
    level become paired codes, every other token a standalone code. A complex argument is a
    standalone code whose text is its head (``{count, plural,``)."""
    out: list[Piece] = []

    def walk(level: list[Item], where: str, plural: bool) -> None:
        b = UnitBuilder(where)
        args: dict[int, Arg] = {}
        names = [
            pair(it.text) if pair and isinstance(it, Token) and it.kind == "tag" else None
            for it in level
        ]
        partner = pair_tags(names)
        closers = set(partner.values())
        for i, it in enumerate(level):
            if isinstance(it, str):
                b.text(it)
            elif isinstance(it, Arg):
                args[b.standalone(it.head)] = it
            elif i in partner:
                end = level[partner[i]]
                assert isinstance(end, Token)
                b.open(it.text, end.text)
            elif i in closers:
                b.close()
            else:
                b.standalone(it.text)
        out.append(Piece(level, None if b.empty else b.build(), plural, args))
        for it in level:
            if isinstance(it, Arg):
                for case in it.cases:
                    walk(case.body, f"{where}/{it.kind}:{case.key}", it.kind != "select")

    walk(items, path, False)
    return out


# --- writing ------------------------------------------------------------------------------------


#: In translated text: a run of apostrophes before a character that a quote may start with
#: (or at the end of the text, where a code follows), or a run of syntax characters (with any
#: apostrophes inside or right after it).
_QUOTE = {
    case: re.compile(rf"('+)(?=[{{}}#|]|\Z)|[{chars}][{chars}']*")
    for case, chars in ((True, "{}#"), (False, "{}"))
}


def quote(text: str, plural_case: bool) -> str:
    """Translated text made literal in an ICU message (ICU's DOUBLE_OPTIONAL apostrophe mode,
    which is also formatjs's): braces, and ``#`` in a plural's case, go in a quoted literal
    (``'{'``, the apostrophes within doubled); a run of apostrophes that could open a quote is
    made even (``''`` is one apostrophe). Other apostrophes (``it's``) are left as they are."""

    def literal(m: re.Match[str]) -> str:
        run = m.group(1)
        if run is not None:
            return run + "'" if len(run) % 2 else run
        return "'" + m.group(0).replace("'", "''") + "'"

    return _QUOTE[plural_case].sub(literal, text)


def render(
    levels: Sequence[Piece],
    translations: Sequence[str | None],
    *,
    target: str | None = None,
    quoting: bool = True,
    escape: Callable[[str], str] | None = None,
) -> str:
    """The message of ``levels`` (from :func:`pieces`) with ``translations[i]`` (tagged text,
    or None to keep the source) for level i's unit, and, with a ``target`` language, every
    plural in the target's CLDR categories. ``escape`` (the format's own, applied to translated
    text before ICU quoting when ``quoting``) keeps translated text from becoming markup."""
    it = iter(zip(levels, translations, strict=True))
    spent = 0  # characters written for complex arguments, nested ones counted at each level

    def esc_for(plural_case: bool) -> Callable[[str], str]:
        def esc(text: str) -> str:
            if escape is not None:
                text = escape(text)
            return quote(text, plural_case) if quoting else text

        return esc

    def level() -> str:
        piece, translation = next(it)
        done = {id(a): argument(a) for a in piece.items if isinstance(a, Arg)}
        unit = piece.unit
        if unit is None or translation is None or translation == unit.text:
            return "".join(done[id(x)] if isinstance(x, Arg) else _source(x) for x in piece.items)
        markers = {
            n: Code(f"{_MARK}{n}s{_MARK}", f"{_MARK}{n}e{_MARK}")
            if code.paired
            else Code(f"{_MARK}{n}{_MARK}")
            for n, code in unit.codes.items()
        }
        restored = restore(translation.replace(_MARK, ""), markers, esc_for(piece.plural_case))
        out: list[str] = []
        text = restored.text
        pos = 0
        for m in _MARKER.finditer(text):
            out.append(text[pos : m.start()])
            pos = m.end()
            n, part = int(m.group(1)), m.group(2)
            if n in piece.args:
                out.append(done[id(piece.args[n])])
                continue
            code = unit.codes[n]
            put = (code.end or "") if part == "e" else code.start
            out.append(put)
            if quoting and put.endswith("'"):  # a quoted literal: an apostrophe after it
                after = len(text[pos:]) - len(text[pos:].lstrip("'"))  # would continue it
                out.append("'" if after % 2 else "")
        out.append(text[pos:])
        return "".join(out)

    def argument(a: Arg) -> str:
        bodies = [(c.key, (c, level())) for c in a.cases]
        if target and a.kind != "select":
            bodies = for_target(
                bodies,
                target,
                explicit=lambda k: k.startswith("="),
                ordinal=a.kind == "selectordinal",
                placeholders=lambda case: _writes(case[0], a.name),
            )
        nonlocal spent
        spent += len(a.head) + len(a.tail)
        spent += sum(len(_lead(c, k)) + len(b) + 1 for k, (c, b) in bodies)
        if spent > MAX_RENDERED:
            raise DocumentError(
                f"an ICU message would grow past {MAX_RENDERED:,} characters in the target's "
                "plural categories (plurals nested in plurals); split it"
            )
        cases = "".join(_lead(c, key) + body + "}" for key, (c, body) in bodies)
        return a.head + cases + a.tail

    out = level()
    if next(it, None) is not None:
        raise ValueError("render got more levels than the message has")
    return out


def _writes(case: Case, name: str) -> set[str]:
    """How ``case`` writes its plural's number: ``#``, or ``{name}`` (the argument itself)."""
    out = set()
    for t in tokens(case.body):
        if t.kind == "hash" or (t.kind == "arg" and t.text.strip("{} ").split(",")[0] == name):
            out.add("#")
    return out


def _lead(case: Case, key: str) -> str:
    """The case's lead with ``key`` in place of its own (a made category, written as the case
    it is made from is written)."""
    if key == case.key:
        return case.lead
    space = _LEAD_SPACE.match(case.lead)
    at = space.end() if space else 0
    return case.lead[:at] + key + case.lead[at + len(case.key) :]
