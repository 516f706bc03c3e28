"""XLIFF 1.2 and 2.x: the sources are the units, the translations fill the targets.

One format, ``xliff`` (``.xlf``, ``.xliff``), tells the version from the root element:
``urn:oasis:names:tc:xliff:document:1.2`` (also 1.1, or no namespace with ``version="1.x"``)
or ``urn:oasis:names:tc:xliff:document:2.0`` (the namespace XLIFF 2.1 and 2.2 keep; their
own ``…:2.1``/``…:2.2`` spellings are accepted too).

Units:

* 1.2: each ``<trans-unit>``'s ``<source>``; when the unit carries a ``<seg-source>`` with
  ``<mrk mtype="seg">`` segments (Okapi, Trados), each segment instead, and the target mirrors
  the ``<seg-source>``. A unit or group with ``translate="no"`` is skipped.
* 2.x: each ``<segment>``'s ``<source>`` in every ``<unit>`` (``translate="no"`` on the unit,
  a group or the file skips it); ``<ignorable>`` is left alone.

Inline elements become tags: the paired ``<g>``, ``<mrk>`` (1.2) and ``<pc>``, ``<mrk>`` (2.x)
wrap ``<gN>…</gN>`` around their translatable text; everything else (``<x/>``, ``<bx/>``,
``<ex/>``, ``<ph>``, ``<bpt>``, ``<ept>``, ``<it>``, ``<ph/>``, ``<sc/>``, ``<ec/>``,
``<cp/>``, ``<sm/>``, ``<em/>``, comments, protected ``<mrk>``) is one standalone ``<xN/>``.
A unit without any text (only codes and whitespace) is not sent to the engine: its target
becomes a copy of its source.

A source (or segment) that is plain text holding an ICU MessageFormat ``plural``, ``select`` or
``selectordinal`` (``{count, plural, one {# file} other {# files}}``) is cut by
:mod:`mtfleet.formats.icu`, as the JSON format cuts its values: one unit per case
(path ``…/plural:one``), the text around the argument one more, the skeleton never sent; the
target gets the message back with, for a ``target_lang``, the target's CLDR plural categories.

``render`` fills or creates ``<target>`` (attributes of an existing one are kept), marks it
translated (1.2 ``<target state="translated">``, 2.x ``<segment state="translated">``) and leaves
every other node as it was. With the optional ``target_lang`` it also names the target:
``target-language`` on each ``<file>`` (1.2) whose targets it wrote, replacing the language
of the targets it replaced (a file with nothing to translate keeps its own, if it names one),
and ``trgLang`` on the root (2.x); a written target's own ``xml:lang`` follows. The round-trip
contract: rendering the sources gives a tree equal to the input apart from the targets (which
equal the sources) and those state attributes.

XML safety (shared with the DOCX format through :func:`parse_untrusted_xml`): lxml with
``resolve_entities=False``, ``no_network=True``, ``load_dtd=False`` and ``huge_tree=False``;
libxml2 refuses entity amplification (billion laughs) itself, and any document with a DOCTYPE
is refused outright (XLIFF and OOXML never need one), so no entity is ever expanded and nothing
outside the document is read. ``defusedxml.lxml`` is deprecated upstream, hence plain lxml.
A format whose files declare their own entities (Android ``strings.xml``: ``<!ENTITY app_name
"NewPipe">``) asks for ``internal_entities``: a DOCTYPE is then let through when its internal
subset holds only internal general entities whose values refer to no other entity (checked on
the text before libxml2 reads it, :func:`check_internal_entities`); the references stay
unexpanded entity nodes in the tree.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, ClassVar

from lxml import etree

from mtfleet.formats import icu, register
from mtfleet.formats.base import (
    TAG,
    Code,
    DocumentError,
    DocumentFormat,
    Rendered,
    Unit,
    UnitBuilder,
    restore,
)

# --- untrusted XML, shared with docx.py ---------------------------------------------------------

_XML_NS = "http://www.w3.org/XML/1998/namespace"


_UNTRUSTED: dict[str, Any] = {
    "resolve_entities": False,
    "no_network": True,
    "load_dtd": False,
    "dtd_validation": False,
    "huge_tree": False,
    "remove_blank_text": False,
    "remove_comments": False,
    "remove_pis": False,
}


def _parser() -> etree.XMLParser:
    return etree.XMLParser(**_UNTRUSTED)


def iterparse_untrusted(file: Any, what: str) -> Iterator[tuple[str, Any]]:
    """``(event, element)`` for each element's start and end in a binary file from a client,
    read as it goes (the caller clears what it is done with), with the settings of
    :func:`parse_untrusted_xml`; DocumentError naming ``what`` for anything else."""
    root = None
    try:
        for event, el in etree.iterparse(file, events=("start", "end"), **_UNTRUSTED):
            if root is None:
                root = el
                docinfo = el.getroottree().docinfo
                if docinfo.doctype or docinfo.internalDTD is not None:
                    raise DocumentError(f"{what} has a DOCTYPE; DTDs and entities are not accepted")
            yield event, el
    except (etree.XMLSyntaxError, ValueError) as exc:
        raise DocumentError(f"{what} is not well-formed XML: {exc}") from None
    if root is None:
        raise DocumentError(f"{what} is empty")


def parse_untrusted_xml(content: bytes, what: str, *, internal_entities: bool = False) -> Any:
    """Parse bytes from a client: no DTD, no entities, no network, no huge trees.

    With ``internal_entities`` a DOCTYPE declaring internal entities is accepted
    (:func:`check_internal_entities`) and each reference to one stays an unexpanded
    ``etree.Entity`` node. Returns the root element; raises DocumentError naming ``what`` for
    anything else.
    """
    checked = internal_entities and check_internal_entities(content, what)
    try:
        root = etree.fromstring(content, _parser())
    except (etree.XMLSyntaxError, ValueError) as exc:
        if not internal_entities and b"<!DOCTYPE" in content[:4096].replace(b"\x00", b""):
            raise DocumentError(
                f"{what} has a DOCTYPE; DTDs and entities are not accepted ({exc})"
            ) from None
        raise DocumentError(f"{what} is not well-formed XML: {exc}") from None
    if root is None:
        raise DocumentError(f"{what} is empty")
    docinfo = root.getroottree().docinfo
    if not checked and (docinfo.doctype or docinfo.internalDTD is not None):
        raise DocumentError(f"{what} has a DOCTYPE; DTDs and entities are not accepted")
    return root


#: Before the root element: the XML declaration, comments, PIs, white space; then a DOCTYPE's
#: name, external identifier and internal subset (a quoted string or comment may hold "]").
_BEFORE_DOCTYPE = re.compile(r"\ufeff?(?:\s|<\?.*?\?>|<!--.*?-->)*+<!DOCTYPE\b", re.S)
_DOCTYPE_REST = re.compile(
    r"\s+(?P<name>[^\s\[>]+)\s*(?P<external>(?:SYSTEM|PUBLIC)\b[^\[>]*)?"
    r"(?:\[(?P<subset>(?:<!--.*?-->|\"[^\"]*\"|'[^']*'|<(?!!--)|[^\]\"'<])*+)\])?\s*>",
    re.S,
)
#: A declaration of the internal subset: white space, a comment, or an internal general entity.
_DECLARATION = re.compile(
    r"\s+|<!--.*?-->"
    r"|<!ENTITY\s+(?P<name>[A-Za-z_:][\w.:-]*)\s+(?P<value>\"[^\"]*\"|'[^']*')\s*>",
    re.S,
)
_ENTITY_REF = re.compile(r"&[A-Za-z_:][\w.:-]*;")


def _prolog_text(content: bytes) -> str:
    """The document as text for a look at its DOCTYPE: decoded by its byte-order mark, else
    as Latin-1 (every encoding an XML declaration may name spells markup in ASCII)."""
    for bom, codec in (
        (b"\xef\xbb\xbf", "latin-1"),
        (b"\xff\xfe\x00\x00", "utf-32-le"),
        (b"\x00\x00\xfe\xff", "utf-32-be"),
        (b"\xff\xfe", "utf-16-le"),
        (b"\xfe\xff", "utf-16-be"),
    ):
        if content.startswith(bom):
            return content[len(bom) :].decode(codec, "replace")
    return content.decode("latin-1")


def check_internal_entities(content: bytes, what: str) -> bool:
    """Refuse a DOCTYPE that is anything but internal general entities with plain values;
    True when the document has a DOCTYPE (so checked), False when it has none.

    Read on the text before libxml2 sees it (libxml2 expands a parameter entity of the
    internal subset while it parses, whatever the parser's options): an external DTD or
    entity (``SYSTEM``/``PUBLIC``), a parameter entity (``<!ENTITY % x …>``, ``%x;``), an
    entity whose value refers to another entity (how an expansion bomb is built, billion
    laughs), and element, attribute or notation declarations are each refused by name.
    """
    text = _prolog_text(content)
    start = _BEFORE_DOCTYPE.match(text)
    if start is None:
        return False
    doctype = _DOCTYPE_REST.match(text, start.end())
    if doctype is None:
        raise DocumentError(f"{what} has a DOCTYPE that cannot be read")
    if doctype.group("external"):
        raise DocumentError(
            f"{what} has a DOCTYPE naming an external DTD (SYSTEM or PUBLIC); only entities "
            "declared in the file itself are accepted"
        )
    subset = doctype.group("subset") or ""
    pos = 0
    while pos < len(subset):
        decl = _DECLARATION.match(subset, pos)
        if decl is None:
            raise DocumentError(f"{what} has a DOCTYPE with {_refused(subset[pos:])}")
        value = decl.group("value") or ""
        if "%" in value:
            raise DocumentError(
                f"{what} declares the entity {decl.group('name')} with a parameter-entity "
                "reference (%); parameter entities are not accepted"
            )
        if _ENTITY_REF.search(value):
            raise DocumentError(
                f"{what} declares the entity {decl.group('name')} by other entities; an "
                "entity that refers to entities (an expansion bomb's shape) is not accepted"
            )
        pos = decl.end()
    return True


def _refused(rest: str) -> str:
    """What a DOCTYPE's internal subset holds that is not accepted, in a few words."""
    if re.match(r"<!ENTITY\s+%", rest):
        return "a parameter entity (<!ENTITY % …>); parameter entities are not accepted"
    if re.match(r"<!ENTITY\s+\S+\s+(?:SYSTEM|PUBLIC)\b", rest):
        return "an external entity (SYSTEM or PUBLIC); only internal entities are accepted"
    if rest.startswith("%"):
        return "a parameter-entity reference (%…;); parameter entities are not accepted"
    if m := re.match(r"<!(ELEMENT|ATTLIST|NOTATION)\b", rest):
        return f'an {m.group(1)} declaration; only <!ENTITY name "value"> is accepted'
    return 'a declaration that is not <!ENTITY name "value">'


# XML 1.0 cannot carry these at all (not even as character references)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(s: str) -> str:
    """Escape translated text for XML content; characters XML 1.0 cannot carry are dropped
    (``\\r`` travels as ``&#13;`` so the parser does not turn it into ``\\n``)."""
    s = _NOT_XML.sub("", s)
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")


def restore_markers(translation: str, codes: dict[int, Code]) -> tuple[Any, list[str]]:
    """Run :func:`restore` with neutral markers standing in for the codes and parse the result.

    Returns a ``<m>`` element whose children are ``<x n="N"/>`` (standalone code N) and
    ``<g n="N">…</g>`` (paired code N around its restored content), with the translated text as
    text and tails, plus restore's warnings. Each code of ``codes`` occurs exactly once, nested
    well, whatever the engine did with its tags; a format then rebuilds its own markup from it.
    """
    if not codes and TAG.search(translation) is None:  # plain text: what restore would give
        tree = etree.Element("m")
        tree.text = _NOT_XML.sub("", translation) or None
        return tree, []
    markers = {
        n: Code(f'<g n="{n}">', "</g>") if code.paired else Code(f'<x n="{n}"/>')
        for n, code in codes.items()
    }
    restored = restore(translation, markers, xml_text)
    return etree.fromstring(f"<m>{restored.text}</m>".encode(), _parser()), restored.warnings


def walk_markers(
    node: Any,
    on_text: Callable[[str], None],
    on_standalone: Callable[[int], None],
    on_open: Callable[[int], None],
    on_close: Callable[[int], None],
) -> None:
    """Visit a :func:`restore_markers` tree in document order."""
    if node.text:
        on_text(node.text)
    for child in node:
        n = int(child.get("n"))
        if child.tag == "x":
            on_standalone(n)
        else:
            on_open(n)
            walk_markers(child, on_text, on_standalone, on_open, on_close)
            on_close(n)
        if child.tail:
            on_text(child.tail)


def serialize(el: Any) -> str:
    """An element with its content (not its tail) as XML text, prefixes as in the document and
    without the namespace declarations lxml would repeat on a detached element."""
    if not isinstance(el.tag, str):  # comment, processing instruction
        return str(etree.tostring(el, encoding="unicode", with_tail=False))
    inner = xml_text(el.text or "") + "".join(
        serialize(child) + xml_text(child.tail or "") for child in el
    )
    start = open_tag(el)
    return f"{start[:-1]}/>" if not inner else f"{start}{inner}{close_tag(el)}"


def _prefixed(el: Any, qname: str) -> str:
    q = etree.QName(qname)
    if q.namespace == _XML_NS:
        return f"xml:{q.localname}"
    prefix = {uri: p for p, uri in el.nsmap.items()}.get(q.namespace) if q.namespace else None
    return f"{prefix}:{q.localname}" if prefix else q.localname


def open_tag(el: Any) -> str:
    """The start tag of ``el``, prefixes as in the document (no namespace declarations)."""
    attrs = "".join(
        f' {_prefixed(el, k)}="{xml_text(v).replace(chr(34), "&quot;")}"'
        for k, v in el.attrib.items()
    )
    return f"<{_prefixed(el, el.tag)}{attrs}>"


def close_tag(el: Any) -> str:
    return f"</{_prefixed(el, el.tag)}>"


def to_bytes(root: Any, content: bytes) -> bytes:
    """Serialize a parsed document the way it came: same encoding and XML declaration. In an
    ASCII-compatible encoding the declaration, the white space around the root element and a
    byte-order mark are the original's bytes (lxml would write the declaration in single quotes
    and drop the final newline), so a part whose tree did not change comes back byte-equal."""
    tree = root.getroottree()
    docinfo = tree.docinfo
    encoding = docinfo.encoding or "UTF-8"
    head = content[:256].replace(b"\x00", b"").removeprefix(b"\xef\xbb\xbf")
    declared = head.lstrip(b"\xfe\xff").startswith(b"<?xml")
    if not content.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00", b"<\x00")):
        prolog = _PROLOG_BYTES.match(content)
        if prolog is not None:
            body = etree.tostring(tree, encoding=encoding, xml_declaration=False)
            tail = content[len(content.rstrip()) :]
            return prolog.group(0) + body.strip() + tail
    standalone = _STANDALONE.search(head.split(b"?>", 1)[0]) if declared else None
    return bytes(
        etree.tostring(
            tree,
            encoding=encoding,
            xml_declaration=declared or encoding.upper() not in {"UTF-8", "UTF8"},
            standalone=None if standalone is None else standalone.group(1) == b"yes",
        )
    )


#: A byte-order mark, an XML declaration and the white space after it (or white space alone).
_PROLOG_BYTES = re.compile(rb"(?:\xef\xbb\xbf)?(?:<\?xml[^>]*\?>)?\s*")
_STANDALONE = re.compile(rb"""standalone\s*=\s*["'](yes|no)["']""")


# --- XLIFF ----------------------------------------------------------------------------------------

_V1_NAMESPACES = {"urn:oasis:names:tc:xliff:document:1.2", "urn:oasis:names:tc:xliff:document:1.1"}
_V2_NAMESPACES = {
    "urn:oasis:names:tc:xliff:document:2.0",
    "urn:oasis:names:tc:xliff:document:2.1",
    "urn:oasis:names:tc:xliff:document:2.2",
}
_PAIRED = {1: {"g", "mrk"}, 2: {"pc", "mrk"}}


@dataclass
class _Slot:
    """One source (or 1.2 segment) and where its translation goes."""

    unit: Unit
    refs: dict[int, Any]  # code number -> the inline element it stands for
    holder: Any  # 1.2: <trans-unit>; 2.x: <segment>
    source: Any  # the element whose content is the unit (<source> or a seg <mrk>)
    segmented: bool = False
    #: no text to translate: not extracted; its target becomes a copy of its source
    empty: bool = False
    #: an ICU message (plain text with a plural/select): its levels, one unit each with text
    icu_levels: list[icu.Piece] | None = None

    def units(self) -> list[Unit]:
        if self.icu_levels is not None:
            return [p.unit for p in self.icu_levels if p.unit is not None]
        return [] if self.empty else [self.unit]


@dataclass
class _Doc:
    root: Any
    version: int
    ns: str
    slots: list[_Slot] = field(default_factory=list)

    def q(self, local: str) -> str:
        return f"{{{self.ns}}}{local}" if self.ns else local


def _parse(content: bytes) -> _Doc:
    root = parse_untrusted_xml(content, "the XLIFF document")
    q = etree.QName(root)
    ns = q.namespace or ""
    if q.localname != "xliff":
        raise DocumentError(f"not an XLIFF document: the root element is <{q.localname}>")
    if ns in _V1_NAMESPACES or (not ns and str(root.get("version", "")).startswith("1.")):
        doc = _Doc(root, 1, ns)
    elif ns in _V2_NAMESPACES:
        doc = _Doc(root, 2, ns)
    else:
        raise DocumentError(
            f"unsupported XLIFF namespace {ns or '(none)'!r} (version "
            f"{root.get('version')!r}); supported: XLIFF 1.2 and 2.x"
        )
    _collect(doc)
    return doc


def _translatable(el: Any, root: Any) -> bool:
    node = el
    while node is not None:
        value = node.get("translate")
        if value is not None:
            return str(value).strip().lower() != "no"
        if node is root:
            break
        node = node.getparent()
    return True


def _inline(doc: _Doc, b: UnitBuilder, el: Any, refs: dict[int, Any]) -> None:
    if el.text:
        b.text(el.text)
    for child in el:
        if _paired(doc, child):
            refs[b.open(open_tag(child), close_tag(child))] = child
            _inline(doc, b, child, refs)
            b.close()
        else:
            refs[b.standalone(serialize(child))] = child
        if child.tail:
            b.text(child.tail)


def _paired(doc: _Doc, child: Any) -> bool:
    """An inline element around translatable text (a paired code), not a standalone one."""
    if not isinstance(child.tag, str):
        return False
    q = etree.QName(child)
    return (
        q.namespace == (doc.ns or None)
        and q.localname in _PAIRED[doc.version]
        and not (q.localname == "mrk" and _protected_mrk(doc, child))
    )


def _protected_mrk(doc: _Doc, mrk: Any) -> bool:
    if doc.version == 1:
        return mrk.get("mtype") == "protected" or mrk.get("translate") == "no"
    return mrk.get("translate") == "no"


#: Inline elements inside an ICU source stand in its text as these characters (private use).
_ICU_MARK = 0xE000
_ICU_MARKS = re.compile("[\ue000-\uf8ff]")


def _icu_slot(doc: _Doc, holder: Any, source: Any, path: str, segmented: bool) -> _Slot | None:
    """A slot for a source whose text is an ICU message with a plural/select, else None.
    Standalone inline elements (Angular's ``<x id="INTERPOLATION"/>``, ``<ph/>``) may sit in
    its cases: each stands in the message as one private-use character, a code of its unit. A
    source with paired elements (``<g>``, ``<pc>``) is not read as ICU."""
    children = list(source)
    texts = (source.text or "") + "".join(child.tail or "" for child in children)
    if "{" not in texts or _ICU_MARKS.search(texts) or len(children) > 0xF8FF - _ICU_MARK:
        return None
    if any(_paired(doc, child) for child in children):
        return None
    marks = [chr(_ICU_MARK + k) for k in range(len(children))]
    text = (source.text or "") + "".join(
        m + (child.tail or "") for m, child in zip(marks, children, strict=True)
    )
    codes = _ICU_MARKS if children else None
    items = icu.parse(text, quoting=True, codes=codes, starts="".join(marks))
    if not icu.has_args(items):
        return None
    refs = dict(enumerate(children))
    levels = icu.pieces(items, path)
    return _Slot(Unit(text, {}, path), refs, holder, source, segmented, icu_levels=levels)


def _slot(doc: _Doc, holder: Any, source: Any, path: str, segmented: bool = False) -> _Slot:
    found = _icu_slot(doc, holder, source, path, segmented)
    if found is not None:
        return found
    b = UnitBuilder(path)
    refs: dict[int, Any] = {}
    _inline(doc, b, source, refs)
    return _Slot(b.build(), refs, holder, source, segmented, b.empty)


def _collect(doc: _Doc) -> None:
    q = doc.q
    if doc.version == 1:
        for fi, file in enumerate(doc.root.iter(q("file"))):
            fname = file.get("original") or f"file{fi + 1}"
            for ti, tu in enumerate(file.iter(q("trans-unit"))):
                if not _translatable(tu, doc.root):
                    continue
                path = f"{fname}#{tu.get('id') or ti + 1}"
                seg_source = tu.find(q("seg-source"))
                segs = (
                    [m for m in seg_source.iter(q("mrk")) if m.get("mtype") == "seg"]
                    if seg_source is not None
                    else []
                )
                if segs:
                    for si, mrk in enumerate(segs):
                        seg_path = f"{path}/{mrk.get('mid') or si + 1}"
                        doc.slots.append(_slot(doc, tu, mrk, seg_path, segmented=True))
                    continue
                source = tu.find(q("source"))
                if source is not None:
                    doc.slots.append(_slot(doc, tu, source, path))
    else:
        for fi, file in enumerate(doc.root.iter(q("file"))):
            fname = file.get("id") or f"f{fi + 1}"
            for ui, unit in enumerate(file.iter(q("unit"))):
                if not _translatable(unit, doc.root):
                    continue
                for si, segment in enumerate(unit.iter(q("segment"))):
                    source = segment.find(q("source"))
                    if source is None:
                        continue
                    path = f"{fname}/{unit.get('id') or ui + 1}/{segment.get('id') or si + 1}"
                    doc.slots.append(_slot(doc, segment, source, path))


def _fill(slot: _Slot, target: Any, translation: str) -> None:
    """Replace ``target``'s content with ``translation``, its codes rebuilt from the source
    (an ICU slot's ``translation`` is the message already rendered: plain text)."""
    for child in list(target):
        target.remove(child)
    target.text = None
    if slot.icu_levels is not None:
        _fill_icu(slot, target, _NOT_XML.sub("", translation))
        return
    tree, _warnings = restore_markers(translation, slot.unit.codes)
    stack = [target]

    def on_text(s: str) -> None:
        parent = stack[-1]
        if len(parent):
            parent[-1].tail = (parent[-1].tail or "") + s
        else:
            parent.text = (parent.text or "") + s

    def on_standalone(n: int) -> None:
        ref = slot.refs.get(n)
        if ref is None:  # a literal tag-like text the builder protected: it is text again
            on_text(slot.unit.codes[n].start)
            return
        el = copy.deepcopy(ref)
        el.tail = None
        stack[-1].append(el)

    def on_open(n: int) -> None:
        ref = slot.refs[n]
        stack.append(etree.SubElement(stack[-1], ref.tag, dict(ref.attrib)))

    def on_close(n: int) -> None:
        stack.pop()

    walk_markers(tree, on_text, on_standalone, on_open, on_close)


def _fill_icu(slot: _Slot, target: Any, message: str) -> None:
    """An ICU message as ``target``'s (emptied) content: its marks become copies of the
    source's inline elements (a category made from ``other`` copies its elements too)."""
    pos = 0
    for m in [*_ICU_MARKS.finditer(message), None]:
        text = message[pos : m.start() if m else len(message)]
        if text and len(target):
            target[-1].tail = (target[-1].tail or "") + text
        elif text:
            target.text = (target.text or "") + text
        if m is None:
            break
        pos = m.end()
        ref = slot.refs.get(ord(m.group(0)) - _ICU_MARK)
        if ref is not None:
            el = copy.deepcopy(ref)
            el.tail = None
            target.append(el)


def _target_for(doc: _Doc, holder: Any, after: Any) -> Any:
    """The holder's <target>, created right after ``after`` (indented like it) if missing."""
    target = holder.find(doc.q("target"))
    if target is None:
        target = etree.SubElement(holder, doc.q("target"))
        target.tail = after.tail
        previous = after.getprevious()
        indent = holder.text if previous is None else previous.tail
        after.addnext(target)
        if indent is not None and not indent.strip():
            after.tail = indent
    return target


class XliffFormat(DocumentFormat):
    name: ClassVar[str] = "xliff"
    extensions: ClassVar[tuple[str, ...]] = (".xlf", ".xliff")
    media_type: ClassVar[str] = "application/xliff+xml"

    def extract(self, content: bytes) -> list[Unit]:
        return [unit for slot in _parse(content).slots for unit in slot.units()]

    def render(
        self, content: bytes, translations: Sequence[str], *, target_lang: str | None = None
    ) -> bytes:
        """Fill the targets. ``target_lang`` (optional) names the language of the targets:
        ``target-language`` on each 1.2 ``<file>`` whose targets were written (or that named
        none), ``trgLang`` on the 2.x root."""
        return self.render_result(content, translations, target_lang=target_lang).content

    def render_result(
        self,
        content: bytes,
        translations: Sequence[str],
        untranslated: AbstractSet[int] = frozenset(),
        *,
        target_lang: str | None = None,
        review: AbstractSet[int] = frozenset(),
    ) -> Rendered:
        """As :meth:`render`; a source with a unit in ``untranslated`` is left untranslated
        as XLIFF says it: a 2.x segment without a target (an earlier one, in another
        language, taken out) and ``state="initial"``; a 1.2 ``<trans-unit>`` likewise without a
        target, or, where a segmented target holds other segments, the segment's source text
        in it and ``state="needs-translation"`` on the target. Never the source marked
        translated. One with a unit in ``review`` (a low quality estimate) is translated and
        marked for review: a 1.2 target's ``state="needs-review-translation"``; a 2.x
        segment's ``state="translated"`` with ``subState="mtfleet:needs-review"`` (2.x has
        no state for it)."""
        doc = _parse(content)
        wanted = sum(len(slot.units()) for slot in doc.slots)
        if len(translations) != wanted:
            raise DocumentError(
                f"{len(translations)} translations for the {wanted} units of this XLIFF document"
            )
        it = iter(translations)
        q = doc.q
        done: set[Any] = set()
        pending: set[Any] = set()  # segmented 1.2 targets with a segment left untranslated
        to_review: set[Any] = set()  # 1.2 targets with a segment to review
        index = 0
        left = 0
        for slot in doc.slots:
            n = len(slot.units())
            missing = any(i in untranslated for i in range(index, index + n))
            doubtful = any(i in review for i in range(index, index + n))
            index += n
            if slot.icu_levels is not None:  # the ICU message, in the target's categories
                mine = [None if p.unit is None else next(it) for p in slot.icu_levels]
                translation = icu.render(
                    slot.icu_levels, mine, target=target_lang, escape=_no_marks
                )
            else:
                translation = slot.unit.text if slot.empty else next(it)
            if missing and not slot.segmented:
                left += 1
                _untranslated(doc, slot.holder)
                continue
            if doc.version == 2:
                target = _target_for(doc, slot.holder, slot.source)
                _fill(slot, target, translation)
                _name_language(target, target_lang)
                slot.holder.set("state", "translated")
                if doubtful:
                    slot.holder.set("subState", "mtfleet:needs-review")
                continue
            tu = slot.holder
            if slot.segmented:
                seg_source = tu.find(q("seg-source"))
                target = _target_for(doc, tu, seg_source)
                if tu not in done:  # the target mirrors the seg-source; segments fill it
                    done.add(tu)
                    _copy_content(seg_source, target)
                segs = [m for m in seg_source.iter(q("mrk")) if m.get("mtype") == "seg"]
                mrk = [m for m in target.iter(q("mrk")) if m.get("mtype") == "seg"][
                    segs.index(slot.source)
                ]
                if missing:  # the copy of its source stays; the target says it is not done
                    left += 1
                    pending.add(target)
                    continue
                _fill(slot, mrk, translation)
            else:
                target = _target_for(doc, tu, slot.source)
                _fill(slot, target, translation)
            _name_language(target, target_lang)
            target.set("state", "translated")
            if doubtful:
                to_review.add(target)
        for target in to_review - pending:
            target.set("state", "needs-review-translation")
        for target in pending:
            _name_language(target, target_lang)
            target.set("state", "needs-translation")
        if target_lang:  # where targets were written, or no language was named
            filled = {next(s.holder.iterancestors(q("file")), None) for s in doc.slots}
            if doc.version == 1:
                for file in doc.root.iter(q("file")):
                    if file in filled or not file.get("target-language"):
                        file.set("target-language", target_lang)
            elif filled or not doc.root.get("trgLang"):
                doc.root.set("trgLang", target_lang)
        warnings = (
            [f"{left} XLIFF segment(s) left untranslated (no target, or state needs-translation)"]
            if left
            else []
        )
        return Rendered(to_bytes(doc.root, content), warnings)


_XML_LANG = f"{{{_XML_NS}}}lang"


def _untranslated(doc: _Doc, holder: Any) -> None:
    """``holder`` (a 2.x ``<segment>``, a 1.2 ``<trans-unit>``) left untranslated: its target,
    if it had one (in any language), taken out; a 2.x segment's state ``initial``."""
    target = holder.find(doc.q("target"))
    if target is not None:
        previous = target.getprevious()
        if previous is not None:
            previous.tail = target.tail
        holder.remove(target)
    if doc.version == 2:
        holder.set("state", "initial")


def _name_language(target: Any, target_lang: str | None) -> None:
    """A target that names its language (``xml:lang``) names the one it is now in."""
    if target_lang and target.get(_XML_LANG) is not None:
        target.set(_XML_LANG, target_lang)


def _no_marks(text: str) -> str:
    """Translated text never carries the characters that stand for inline elements."""
    return _ICU_MARKS.sub("", text)


def _copy_content(src: Any, dst: Any) -> None:
    for child in list(dst):
        dst.remove(child)
    dst.text = src.text
    for child in src:
        dst.append(copy.deepcopy(child))


register(XliffFormat())
