"""YAML locale files (Rails i18n, i18next, Symfony...): a unit per string value.

The file is never re-serialised. ruamel.yaml (pure Python) composes the document into nodes whose
marks give each scalar's offsets in the text; render splices a translated scalar over the span of
its source, so comments, key order, quoting style, indentation, anchors, aliases, merge keys and
blank lines stay byte for byte, and an identity render gives back the file byte-equal.

What is a unit:

* a string scalar that is a mapping value or a sequence item (keys never are; numbers,
  booleans, nulls and timestamps are not strings, and a plain scalar counts as a string only if
  YAML 1.1, which Ruby's Psych reads, agrees with YAML 1.2: ``yes``/``no``/``on``/``off`` are
  booleans to Rails); a plain ``:symbol`` is a Ruby symbol, not text;
* once: an anchored value is a unit where it is defined, its aliases (``*name``) and whatever a
  merge key (``<<: *name``) brings in follow it;
* only if it holds text: a value made only of codes, white space and punctuation (strftime and
  number formats such as ``"%Y-%m-%d"``, ``"%n %u"``, ``", "``, ``"$"``) has nothing to
  translate, and stays as it is. The white space around a value's text (``" and "``) is kept.

Inside a value these are codes: Rails ``%{count}``, Ruby ``%<count>d``, i18next ``{{count}}``,
``$t(key)``, ``${name}``, Symfony ``%name%``, ICU/Symfony ``{name}``, printf ``%s %1$d %-d %%``,
strftime directives (``%Y``, ``%-d``, ``%b``), HTML tags (paired when they match) and entities.
ICU ``plural``/``select`` arguments (Symfony's ``+intl-icu`` files) are cut as
:mod:`mtfleet.formats.icu` cuts them for the JSON format: one unit per case, the
skeleton never sent, the target's plural categories with a target language.

A translated scalar keeps its style (plain, single-quoted, double-quoted, literal ``|`` or
folded ``>`` block) when the translation can be written in it; otherwise it becomes
double-quoted, escaped (a plain scalar that would hold ``: ``, `` #``, start with ``*``, ``&``,
``!``, ``@``, a quote, or read as a number or boolean under YAML 1.1 or 1.2). A block scalar
keeps its header (chomping, comment) and indentation, its lines the translation's (a folded one
gets a blank line per line break); one with an indentation indicator is written double-quoted.
A translation the engine left empty keeps the source. The output is composed again before it
is returned: should a value not read back as the translation, every translated scalar is
written double-quoted.

With a target language:

* a root mapping with a single key that is a language tag (Rails' ``en:``, ``"en-US":``) gets
  the target's tag, in the key's quoting style;
* a Rails plural (a block mapping whose keys are CLDR categories, ``other`` among them, each
  holding a string) gets exactly the categories rails-i18n selects for the target
  (:func:`plurals.for_target` with ``rules="rails"``: Spanish ``one``/``other``, Russian
  ``one``/``few``/``many``/``other``): a made category is a new line before ``other`` holding
  ``other``'s translation, a category the target lacks is removed, and a case that spells its
  number or leaves it out (``maximum is 1 character``, no ``%{count}``) where the target's
  category covers several numbers is made from ``other``; ``zero`` is explicit in Rails (Ruby
  I18n reads it for 0 in every language) and stays. A plural in flow style, or whose cases
  carry anchors, is left as it is.

Refused (DocumentError): text that is not YAML (with the line), a document whose top level is a
single value rather than a mapping or a list, recursive aliases, aliases that expand the
document past :data:`MAX_EXPANDED_NODES` nodes ("billion laughs"), collections nested more than
:data:`MAX_DEPTH` deep (brackets are counted before the YAML reader, which slows down with
each open one, runs).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from babel import Locale, UnknownLocaleError
from ruamel.yaml import YAML
from ruamel.yaml.composer import MaxDepthExceededError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.resolver import VersionedResolver

from mtfleet.formats import icu, register
from mtfleet.formats.base import TAG, DocumentError, DocumentFormat, Unit
from mtfleet.formats.plurals import CATEGORIES, for_target
from mtfleet.formats.text import check_count, decode_document

#: Nodes the document may stand for once its aliases are expanded (a "billion laughs" file
#: stands for 10**9); a document may also expand to ten times its own nodes.
MAX_EXPANDED_NODES = 200_000

#: Collections nested deeper than this are refused (locale files nest a dozen levels at most;
#: the YAML reader slows down with every open ``[``/``{``).
MAX_DEPTH = 100

_STR = "tag:yaml.org,2002:str"
_RESOLVERS = (VersionedResolver(version=(1, 1)), VersionedResolver(version=(1, 2)))

#: Codes inside a value, besides ICU's (``{name}``, plural/select arguments: :mod:`icu`).
_CODE = re.compile(
    r"""
      (?P<rails>%\{[^{}\s]*\})
    | (?P<ruby>%<[A-Za-z_]\w*>[-+\ \#0]*\d*(?:\.\d+)?[A-Za-z])
    | (?P<i18next>\{\{[^{}]*\}\})
    | (?P<nest>\$t\([^()]*\))
    | (?P<dollar>\$\{[^{}]*\})
    | (?P<symfony>%[A-Za-z_][\w.]+%(?![A-Za-z{<(]))
    | (?P<printf>%(?:\([A-Za-z_][\w.-]*\))?(?:\d+\$)?[-+\#0_^:]*(?:\d+|\*)?(?:\.(?:\d+|\*))?
         (?:hh|h|ll|l|L|q|j|z|t)?[A-Za-z@%+])
    | (?P<tag></?(?:[A-Za-z][A-Za-z0-9:-]*|\d+)(?:\s[^<>]*)?/?>)
    | (?P<entity>&(?:\#\d{1,7}|\#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});)
    """,
    re.VERBOSE,
)
_TAG_NAME = re.compile(r"</?([A-Za-z][A-Za-z0-9:-]*|\d+)")
_VOID = {"br", "hr", "img", "input", "wbr", "meta", "link", "source", "area", "col", "embed"}
#: A language tag as a Rails root key (``en``, ``en-US``, ``pt_BR``, ``zh-Hant-TW``).
_LANG_KEY = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*")
#: A Ruby symbol as Psych reads a plain scalar (``:year``).
_SYMBOL = re.compile(r":[^\s:]")
#: Characters a quoted or block scalar cannot hold as they are (C0/C1 controls but tab and
#: newline, line and paragraph separators, lone surrogates, non-characters).
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")
_PLAIN_FIRST = set("-?:,[]{}#&*!|>'\"%@` \t")
_BLOCK_HEADER = re.compile(r"([|>])([-+1-9]*)")
_SPACES = re.compile(" *")
#: White space to YAML (Python's str.strip also takes U+00A0, U+2028...).
_WS = " \t\r\n"
_BRACKET = re.compile(r"[\[\]{}]")


# --- reading ------------------------------------------------------------------------------------


def _tag(node: Node) -> str:
    return str(node.tag)


@dataclass
class _Scalar:
    """A string value that is a unit: ``start``/``end`` the span of its scalar token (anchor and
    tag excluded; a block scalar's span runs over its trailing blank lines)."""

    node: ScalarNode
    start: int
    end: int
    style: str  # "", "'", '"', "|", ">"
    flow: bool  # inside a flow collection ([...] or {...})
    value: str
    lead: str  # white space around the text, kept
    trail: str
    items: list[icu.Item]  # the text as an ICU message (codes, plural/select arguments)
    levels: list[icu.Piece]  # its units: the message, and each plural/select case
    units: list[Unit | None]  # a level's unit, None where it has nothing to translate


@dataclass
class _Plural:
    """A Rails plural: (category, key node, value node) in the file's order."""

    path: str
    cases: list[tuple[str, ScalarNode, ScalarNode]]


@dataclass
class _Parsed:
    bom: str
    text: str
    scalars: list[_Scalar]
    plurals: list[_Plural]
    root_keys: list[ScalarNode]
    ascii_escaped: bool  # the file writes non-ASCII text as \\u escapes
    quoting: bool  # ICU quoting applies (the file has plural/select arguments)
    #: every value scalar outside plurals, in document order: (path, tag, value, node id)
    leaves: list[tuple[str, str, str, int]] = field(default_factory=list)


def _too_deep() -> DocumentError:
    return DocumentError(f"the YAML document nests collections more than {MAX_DEPTH} levels deep")


def _compose(text: str) -> list[Node]:
    # brackets counted whether quoted or not: an upper bound, found in linear time
    depth = 0
    for m in _BRACKET.finditer(text):
        depth = depth + 1 if m.group(0) in "[{" else max(0, depth - 1)
        if depth > MAX_DEPTH:
            raise _too_deep()
    yaml = YAML(typ="safe", pure=True)
    yaml.max_depth = MAX_DEPTH
    try:
        composer = yaml.composer
        composer.warn_double_anchors = False
        return [doc for doc in yaml.compose_all(text) if doc is not None]
    except MaxDepthExceededError:
        raise _too_deep() from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        problem = exc.problem or exc.context or "cannot be read"
        if exc.context and exc.problem:
            problem = f"{exc.problem} ({exc.context})"
        raise DocumentError(f"not valid YAML: {where}{problem}") from None
    except YAMLError as exc:  # the reader: characters YAML does not allow
        raise DocumentError(f"not valid YAML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise DocumentError("not valid YAML for a locale file: nested too deeply") from None


def _expanded_size(doc: Node, limit: int) -> int:
    """How many nodes the document stands for with its aliases expanded (stops past
    ``limit``); DocumentError for an alias inside the node it names (a recursive document)."""
    memo: dict[int, int] = {}
    open_: set[int] = set()

    def size(node: Node) -> int:
        key = id(node)
        if key in memo:
            return memo[key]
        if key in open_:
            raise DocumentError("the YAML document refers to itself (a recursive alias)")
        open_.add(key)
        total = 1
        if isinstance(node, MappingNode):
            for k, v in node.value:
                total += size(k) + size(v)
                if total > limit:
                    break
        elif isinstance(node, SequenceNode):
            for item in node.value:
                total += size(item)
                if total > limit:
                    break
        open_.discard(key)
        memo[key] = total
        return total

    return size(doc)


def _node_count(doc: Node) -> int:
    seen: set[int] = set()
    stack = [doc]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            for k, v in node.value:
                stack += (k, v)
        elif isinstance(node, SequenceNode):
            stack += node.value
    return len(seen)


def _value_start(text: str, pos: int) -> int:
    """Past a node's properties (``&anchor``, ``!tag``, and white space or comments after
    them): where its scalar token starts."""
    n = len(text)
    while pos < n:
        c = text[pos]
        if c in "&!":
            while pos < n and text[pos] not in " \t\r\n":
                pos += 1
        elif c in " \t\r\n":
            pos += 1
        elif c == "#":
            while pos < n and text[pos] not in "\r\n":
                pos += 1
        else:
            break
    return pos


def _is_str(node: ScalarNode) -> bool:
    if _tag(node) != _STR:
        return False
    if node.style:  # quoted or block: a string whatever it says
        return True
    value = node.value
    return _SYMBOL.match(value) is None and all(
        str(r.resolve(ScalarNode, value, (True, False))) == _STR for r in _RESOLVERS
    )


def _markup(tag: str) -> tuple[bool, str] | None:
    """An HTML tag that pairs (``(closing, name)``); None for self-closing and void ones."""
    if tag.endswith("/>"):
        return None
    m = _TAG_NAME.match(tag)
    name = m.group(1).lower() if m else ""
    return None if name in _VOID else (tag.startswith("</"), name)


def _message(core: str, quoting: bool) -> list[icu.Item]:
    return icu.parse(core, quoting=quoting, codes=_CODE)


def _has_text(unit: Unit | None) -> bool:
    """Whether a unit holds something to translate: a letter outside its codes (a format such
    as ``%Y-%m-%d``, a number, punctuation hold none)."""
    return unit is not None and any(c.isalpha() for c in TAG.sub("", unit.text))


def _path(path: str, key: Node) -> str:
    name = key.value if isinstance(key, ScalarNode) else "?"
    return f"{path}.{name}" if path else str(name)


class _Walker:
    def __init__(self, text: str) -> None:
        self.text = text
        self.seen: set[int] = set()
        self.keys: set[int] = set()
        self.found: list[tuple[ScalarNode, str, bool]] = []  # value scalars: node, path, flow
        self.plurals: list[_Plural] = []
        self.leaves: list[tuple[str, str, str, int]] = []  # value scalars outside plurals

    def keys_of(self, node: Node) -> None:
        stack = [node]
        while stack:
            n = stack.pop()
            if id(n) in self.keys:
                continue
            self.keys.add(id(n))
            self.seen.add(id(n))
            if isinstance(n, MappingNode):
                for k, v in n.value:
                    stack += (k, v)
            elif isinstance(n, SequenceNode):
                stack += n.value

    def walk(self, node: Node, path: str, flow: bool) -> None:
        if id(node) in self.seen:
            return
        self.seen.add(id(node))
        if isinstance(node, ScalarNode):
            self.leaves.append((path, _tag(node), node.value, id(node)))
            if _is_str(node):
                self.found.append((node, path, flow))
        elif isinstance(node, SequenceNode):
            inner = flow or bool(node.flow_style)
            for i, item in enumerate(node.value):
                self.walk(item, f"{path}[{i}]", inner)
        elif isinstance(node, MappingNode):
            inner = flow or bool(node.flow_style)
            plural = None if inner else self.plural(node, path)
            for k, v in node.value:
                self.keys_of(k)
                if plural is not None:
                    self.seen.add(id(v))
                    if _is_str(v):
                        self.found.append((v, _path(path, k), False))
                else:
                    self.walk(v, _path(path, k), inner)
            if plural is not None:
                self.plurals.append(plural)

    def plural(self, node: MappingNode, path: str) -> _Plural | None:
        """The mapping as a Rails plural, if it is one whose cases can be added and removed
        (no anchors, no alias, each key at the start of its line)."""
        cases: list[tuple[str, ScalarNode, ScalarNode]] = []
        for k, v in node.value:
            if not (isinstance(k, ScalarNode) and isinstance(v, ScalarNode)):
                return None
            if k.value not in CATEGORIES or _tag(k) != _STR or k.anchor or v.anchor:
                return None
            if id(v) in self.seen or _tag(v) != _STR:
                return None
            line_start = self.text.rfind("\n", 0, k.start_mark.index) + 1
            if self.text[line_start : k.start_mark.index].strip(" "):
                return None
            cases.append((k.value, k, v))
        keys = [c for c, _, _ in cases]
        if "other" not in keys or len(keys) < 2 or len(set(keys)) != len(keys):
            return None
        return _Plural(path, cases)


def _root_key(doc: Node) -> ScalarNode | None:
    """A Rails root key: the only key of the root mapping, a language tag, over a mapping."""
    if not isinstance(doc, MappingNode) or len(doc.value) != 1:
        return None
    key, value = doc.value[0]
    if not isinstance(key, ScalarNode) or not isinstance(value, MappingNode):
        return None
    if key.style not in (None, "", "'", '"') or key.anchor or not isinstance(key.value, str):
        return None
    if not _LANG_KEY.fullmatch(key.value):
        return None
    try:
        Locale.parse(key.value.replace("-", "_"))
    except (UnknownLocaleError, ValueError, TypeError):
        return None
    return key


def _parse(content: bytes) -> _Parsed:
    bom, text = decode_document(content, "YAML")
    docs = _compose(text)
    walker = _Walker(text)
    root_keys: list[ScalarNode] = []
    try:
        for doc in docs:
            if isinstance(doc, ScalarNode) and _tag(doc) != "tag:yaml.org,2002:null":
                raise DocumentError(
                    "not a YAML locale file: its top level is a single value, not a mapping of "
                    "keys to strings or a list of strings"
                )
            nodes = _node_count(doc)
            limit = max(MAX_EXPANDED_NODES, 10 * nodes)
            if _expanded_size(doc, limit) > limit:
                raise DocumentError(
                    f"the YAML document's aliases expand it past {limit} nodes "
                    "(a 'billion laughs' document?); refused"
                )
            key = _root_key(doc)
            if key is not None:
                root_keys.append(key)
            walker.walk(doc, "", False)
    except RecursionError:
        raise DocumentError("not valid YAML for a locale file: nested too deeply") from None
    found = [(n, p, f) for n, p, f in walker.found if id(n) not in walker.keys]
    quoting = any(icu.has_args(_message(n.value.strip(_WS), False)) for n, _, _ in found)
    scalars: list[_Scalar] = []
    for node, path, flow in found:  # (a key's scalar aliased as a value stays: keys never change)
        value: str = node.value
        core = value.strip(_WS)
        items = _message(core, quoting)
        levels = icu.pieces(items, path, pair=_markup)
        units = [p.unit if _has_text(p.unit) else None for p in levels]
        if not any(units) and not icu.has_args(items):
            continue
        lead = value[: len(value) - len(value.lstrip(_WS))]
        trail = value[len(value.rstrip(_WS)) :]
        start = _value_start(text, node.start_mark.index)
        style = node.style or ""
        scalars.append(
            _Scalar(
                node,
                start,
                node.end_mark.index,
                style,
                flow,
                value,
                lead,
                trail,
                items,
                levels,
                units,
            )
        )
    scalars.sort(key=lambda s: s.start)
    ascii_escaped = not re.search(r"[^\x00-\x7f]", text) and bool(
        re.search(r"\\u(?!00[0-7])[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}", text)
    )
    return _Parsed(
        bom, text, scalars, walker.plurals, root_keys, ascii_escaped, quoting, walker.leaves
    )


# --- writing scalars ----------------------------------------------------------------------------

_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\0": "\\0",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    "\x1b": "\\e",
    "\x85": "\\N",
    "\xa0": "\\_",
    "\u2028": "\\L",
    "\u2029": "\\P",
}


def _double(value: str, ascii_only: bool) -> str:
    out = ['"']
    for c in value:
        code = ord(c)
        if c == "\ufeff":
            out.append("\\ufeff")
        elif c in _ESCAPES and (c != "\xa0" or ascii_only):
            out.append(_ESCAPES[c])
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF) or (ascii_only and code > 0x7F):
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def _resolves_str(value: str) -> bool:
    return all(str(r.resolve(ScalarNode, value, (True, False))) == _STR for r in _RESOLVERS)


def _plain_ok(value: str, flow: bool) -> bool:
    if not value or value[0] in _PLAIN_FIRST or value[-1] in " \t:":
        return False
    if _UNPRINTABLE.search(value) or any(c in value for c in "\n\t\ufeff"):
        return False
    if ": " in value or " #" in value or value.startswith(("---", "...")):
        return False
    if flow and any(c in value for c in ",[]{}:#?"):  # YAML 1.1 (Psych, libyaml): "?" too
        return False
    return _SYMBOL.match(value) is None and _resolves_str(value)


def _inline(value: str, style: str, flow: bool, ascii_only: bool) -> str:
    """A one-line scalar for ``value``: in ``style`` if it can hold it, else double-quoted."""
    simple = not (ascii_only and re.search(r"[^\x00-\x7f]", value))
    if style == "" and simple and _plain_ok(value, flow):
        return value
    if (
        style == "'"
        and simple
        and not _UNPRINTABLE.search(value)
        and not any(c in value for c in "\n\r\ufeff")
    ):
        return "'" + value.replace("'", "''") + "'"
    return _double(value, ascii_only)


def _line_break(text: str, pos: int) -> str:
    end = text.find("\n", pos)
    return "\r\n" if end > 0 and text[end - 1] == "\r" else "\n"


def _block_edit(text: str, s: _Scalar, new: str) -> tuple[int, int, str] | None:
    """The edit that writes ``new`` in the block scalar ``s``'s own style: its content lines
    replaced, its header and trailing line breaks kept. None where that style cannot hold it."""
    header = _BLOCK_HEADER.match(text, s.start)
    if header is None or any(c.isdigit() for c in header.group(2)):
        return None  # an explicit indentation indicator: not rewritten in place
    lead_nl = len(s.value) - len(s.value.lstrip("\n"))
    trail_nl = len(s.value) - len(s.value.rstrip("\n"))
    if not new.startswith(s.value[:lead_nl]) or not new.endswith(
        s.value[len(s.value) - trail_nl :]
    ):
        return None
    body = new[lead_nl : len(new) - trail_nl]
    if not body or body[0] in " \t\n" or body[-1] == "\n" or _UNPRINTABLE.search(body):
        return None
    if "\r" in body or "\ufeff" in body:
        return None
    lines = body.split("\n")
    if s.style == ">" and any(line[:1] in (" ", "\t") for line in lines):
        return None
    # the original content lines: from the first line holding text to the last
    span = text[s.start : s.end]
    line_starts = [s.start + m.end() for m in re.finditer(r"\n", span)]
    content = [p for p in line_starts if p < s.end and text[p : _eol(text, p, s.end)].strip(_WS)]
    if not content:
        return None
    first, last = content[0], content[-1]
    indent = text[first : _SPACES.match(text, first).end()]  # type: ignore[union-attr]
    end = _eol(text, last, s.end)
    if text[end - 1 : end] == "\r":
        end -= 1
    eol = _line_break(text, s.start)
    if s.style == ">":
        folded: list[str] = []
        for i, line in enumerate(lines):
            folded.append(line)
            if line and i < len(lines) - 1:
                folded.append("")
        lines = folded
    out = eol.join(indent + line if line else "" for line in lines)
    return first, end, out


def _eol(text: str, pos: int, limit: int) -> int:
    end = text.find("\n", pos, limit)
    return limit if end < 0 else end


def _block_as_double(text: str, s: _Scalar, new: str, ascii_only: bool) -> tuple[int, int, str]:
    """A block scalar rewritten double-quoted: from its header to its last content line (a
    comment on the header line is kept after the string)."""
    header_end = _eol(text, s.start, s.end)
    header = text[s.start : header_end].rstrip("\r")
    comment = header.find("#")
    note = "  " + header[comment:] if comment > 0 else ""
    span = text[s.start : s.end]
    last_text = max((m.end() for m in re.finditer(r"[^ \t\r\n]", span)), default=len(header))
    return s.start, s.start + last_text, _double(new, ascii_only) + note


def _scalar_edit(
    text: str, s: _Scalar, new: str, ascii_only: bool, quote_all: bool
) -> tuple[int, int, str]:
    if s.style in ("|", ">"):
        if not quote_all and not (ascii_only and re.search(r"[^\x00-\x7f]", new)):
            edit = _block_edit(text, s, new)
            if edit is not None:
                return edit
        return _block_as_double(text, s, new, ascii_only)
    style = '"' if quote_all else s.style
    return s.start, s.end, _inline(new, style, s.flow, ascii_only)


def _escaper(items: Sequence[icu.Item]) -> Callable[[str], str] | None:
    """Translated text must not turn into markup the source did not have: in values with
    HTML, ``<`` before a tag-like name and ``&`` before an entity-like name are escaped (ICU
    quoting is :func:`icu.render`'s)."""
    if not any(t.kind == "tag" or t.text.startswith("&") for t in icu.tokens(items)):
        return None

    def esc(s: str) -> str:
        s = re.sub(r"&(?=#?[A-Za-z0-9]+;)", "&amp;", s)
        return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", s)

    return esc


def _translated(
    s: _Scalar, translations: Sequence[str], target: str | None, quoting: bool
) -> str | None:
    """The scalar's new value from its units' translations (None: the source, unchanged)."""
    todo = iter(translations)
    mine: list[str | None] = []
    for unit in s.units:
        t = None if unit is None else next(todo)
        mine.append(None if t is None or unit is None or t == unit.text or not t.strip(_WS) else t)
    has_args = icu.has_args(s.items)
    if all(t is None for t in mine) and not (target and has_args):
        return None
    escape = _escaper(s.items)
    core = icu.render(s.levels, mine, target=target, quoting=quoting, escape=escape).strip(_WS)
    if has_args:
        # the skeleton is never sent to the engine; should escaping ever let a translation
        # break it, the source's text (in the target's categories) is kept
        kept = icu.render(s.levels, [None] * len(s.levels), target=target, quoting=quoting)
        try:
            same = icu.skeleton(_message(core, quoting)) == icu.skeleton(_message(kept, quoting))
        except DocumentError:
            same = False
        core = core if same else kept.strip(_WS)
    new = s.lead + core + s.trail
    return None if not core or new == s.value else new


# --- the format ---------------------------------------------------------------------------------


@dataclass
class _Edit:
    start: int
    end: int
    text: str


def _line_span(text: str, key: ScalarNode, value: ScalarNode) -> tuple[int, int]:
    """A plural case's lines: from its key's line to the end of its value's line."""
    start = text.rfind("\n", 0, key.start_mark.index) + 1
    end = value.end_mark.index
    if value.style not in ("|", ">"):
        nl = text.find("\n", end)
        end = len(text) if nl < 0 else nl + 1
    return start, end


class YamlI18nFormat(DocumentFormat):
    name = "yaml"
    extensions = (".yml", ".yaml")
    media_type = "application/yaml"

    def extract(self, content: bytes) -> list[Unit]:
        return [u for s in _parse(content).scalars for u in s.units if u is not None]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        parsed = _parse(content)
        units = [u for s in parsed.scalars for u in s.units if u is not None]
        check_count(self.name, units, translations)
        new_values: dict[int, str] = {}
        at = 0
        for s in parsed.scalars:
            count = sum(u is not None for u in s.units)
            new = _translated(s, translations[at : at + count], target_lang, parsed.quoting)
            at += count
            if new is not None:
                new_values[id(s.node)] = new
        out = self._write(parsed, new_values, target_lang, quote_all=False)
        if out == parsed.text:
            return content
        if not self._reads_back(parsed, out, new_values, target_lang):
            out = self._write(parsed, new_values, target_lang, quote_all=True)
            if not self._reads_back(parsed, out, new_values, target_lang):
                raise DocumentError("the translated YAML could not be written so it reads back")
        return (parsed.bom + out).encode("utf-8")

    def _write(
        self,
        parsed: _Parsed,
        new_values: dict[int, str],
        target_lang: str | None,
        *,
        quote_all: bool,
    ) -> str:
        text = parsed.text
        edits: list[_Edit] = []
        written: dict[int, str] = {}  # a translated scalar's text as written, by node
        for s in parsed.scalars:
            new = new_values.get(id(s.node))
            if new is None:
                continue
            start, end, out = _scalar_edit(text, s, new, parsed.ascii_escaped, quote_all)
            edits.append(_Edit(start, end, out))
            block = s.style in ("|", ">")
            written[id(s.node)] = _double(new, parsed.ascii_escaped) if block else out
        if target_lang:
            for key in parsed.root_keys:
                if key.value != target_lang:
                    start = _value_start(text, key.start_mark.index)
                    edits.append(_Edit(start, key.end_mark.index, self._key(key, target_lang)))
            edits += self._plural_edits(parsed, written, target_lang)
        return _apply(text, edits)

    @staticmethod
    def _key(key: ScalarNode, target: str) -> str:
        if key.style == "'" or key.style == '"':
            return _inline(target, key.style, False, False)
        return target if _plain_ok(target, False) else _double(target, False)

    @staticmethod
    def _plural_edits(parsed: _Parsed, written: dict[int, str], target: str) -> list[_Edit]:
        text = parsed.text
        edits: list[_Edit] = []
        for plural in parsed.plurals:
            cases = [(cat, (k, v)) for cat, k, v in plural.cases]
            wanted = for_target(
                cases,
                target,
                explicit=lambda c: c == "zero",
                rules="rails",
                placeholders=lambda case: _placeholders(case[1].value),
            )
            own = dict(cases)
            keep = {id(case) for cat, case in wanted if case is own.get(cat)}
            for _, case in cases:
                if id(case) not in keep:
                    start, end = _line_span(text, *case)
                    edits.append(_Edit(start, end, ""))
            made = [cat for cat, case in wanted if case is not own.get(cat)]
            if not made:
                continue
            other_key, other_value = next(kv for cat, kv in cases if cat == "other")
            value_text = written.get(id(other_value))
            if value_text is None:  # not translated: the source's own scalar
                start = _value_start(text, other_value.start_mark.index)
                value_text = text[start : other_value.end_mark.index]
                if other_value.style in ("|", ">") or "\n" in value_text:
                    value_text = _double(other_value.value, parsed.ascii_escaped)
            line_start = text.rfind("\n", 0, other_key.start_mark.index) + 1
            indent = text[line_start : other_key.start_mark.index]
            # values aligned in a column (``one:   "Byte"``) stay aligned with other's
            value_col = _value_start(text, other_value.start_mark.index) - line_start
            aligned = any(
                re.fullmatch(
                    r":  +", text[k.end_mark.index : _value_start(text, v.start_mark.index)]
                )
                for _, (k, v) in cases
            )
            eol = _line_break(text, line_start)
            quote = other_key.style or ""
            lines = []
            for cat in made:
                key = f"{quote}{cat}{quote}"
                pad = max(1, value_col - len(indent) - len(key) - 1) if aligned else 1
                lines.append(f"{indent}{key}:{' ' * pad}{value_text}{eol}")
            edits.append(_Edit(line_start, line_start, "".join(lines)))
        return edits

    def _reads_back(
        self, parsed: _Parsed, out: str, new_values: dict[int, str], target_lang: str | None
    ) -> bool:
        """The written text composes, and every value outside plurals reads as intended."""
        try:
            again = _parse(out.encode("utf-8"))
        except DocumentError:
            return False
        renamed = bool(target_lang and parsed.root_keys)

        def where(path: str) -> str:
            return _strip_root(path) if renamed else path

        expected = [(where(p), t, new_values.get(n, v)) for p, t, v, n in parsed.leaves]
        # a plural the target's categories cut down to one case reads as a plain mapping
        plurals = {where(p.path) for p in parsed.plurals}
        got = [
            (where(p), t, v)
            for p, t, v, _ in again.leaves
            if where(p).rpartition(".")[0] not in plurals
        ]
        return got == expected


def _placeholders(value: str) -> set[str]:
    """The codes of a value that stand for a value (``%{count}``, ``%d``, ``{{count}}``)."""
    return {m.group(0) for m in _CODE.finditer(value) if m.lastgroup not in ("tag", "entity")}


def _strip_root(path: str) -> str:
    return path.split(".", 1)[1] if "." in path else ""


def _apply(text: str, edits: list[_Edit]) -> str:
    edits.sort(key=lambda e: (e.start, e.end))
    out: list[str] = []
    pos = 0
    for e in edits:
        if e.start < pos:
            continue  # inside a removed plural case
        out.append(text[pos : e.start])
        out.append(e.text)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)


register(YamlI18nFormat())
