"""ICU MessageFormat plural/select/selectordinal in JSON i18n, ARB and XLIFF documents.

Each case's message is a unit of its own (the skeleton never reaches the engine), and a
translation into a target carries exactly that target's CLDR plural categories, computed here
from Babel, never from the code under test. The output is read back with a small strict ICU
parser written for these tests (ICU4J's rules: apostrophe quoting in DOUBLE_OPTIONAL mode,
``#`` only directly in a plural's case, ``other`` required), independent of
:mod:`mtfleet.formats.icu`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lxml.etree as etree
import pytest
from babel import Locale
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mtfleet.formats import icu
from mtfleet.formats.arb import ArbFormat
from mtfleet.formats.base import TAG, DocumentError, DocumentFormat, Unit
from mtfleet.formats.json_i18n import JsonI18nFormat
from mtfleet.formats.xliff import XliffFormat

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
MESSAGES = FIXTURES / "icu" / "messages_en.json"
ICU_FILES = [
    MESSAGES,
    FIXTURES / "json" / "arb-icu-en.json",
    FIXTURES / "arb" / "finamp_app_en.arb",
    FIXTURES / "arb" / "intl_en.arb",
    FIXTURES / "arb" / "app_en.arb",
    FIXTURES / "arb" / "compact_bom_en.arb",
]
ALL_JSON = sorted({*ICU_FILES, *(FIXTURES / "json").iterdir(), *(FIXTURES / "arb").iterdir()})
TARGETS = ["ru", "ar", "ja", "pl"]
HOSTILE = " it's '{' a {b} #, 50% <script>alert('x')</script> & &amp; \"q\" } {"


def fmt_for(path: Path) -> DocumentFormat:
    if path.suffix == ".arb":
        return ArbFormat()
    if path.suffix in (".xlf", ".xliff"):
        return XliffFormat()
    return JsonI18nFormat()


def shout(tagged: str) -> str:
    """Pseudo-translation: upper-case the text, keep every tag where it is."""
    out: list[str] = []
    pos = 0
    for m in TAG.finditer(tagged):
        out += [tagged[pos : m.start()].upper(), m.group(0)]
        pos = m.end()
    return "".join([*out, tagged[pos:].upper()])


def hostile(unit: Unit) -> str:
    """An engine that drops the first tag, repeats the last one and writes ICU syntax."""
    found = [m.group(0) for m in TAG.finditer(unit.text)]
    text = unit.text
    if found:
        text = text.replace(found[0], "", 1) + found[-1]
    return text + HOSTILE


def cldr(lang: str, *, ordinal: bool = False) -> set[str]:
    loc = Locale.parse(lang)
    return set((loc.ordinal_form if ordinal else loc.plural_form).tags) | {"other"}


def origin_of(a: Any, key: str, target: str | None) -> list[Any]:
    """The source case a target's case is made from: its own, or ``other`` where the source
    lacks it, or where the target's category covers more than one number (Russian ``one``: 1,
    21, 31…) and the source's case spells its number (no ``#``, no ``{count}`` of its own)."""
    src = dict(a.cases)
    if key not in src:
        return src["other"]
    if target is None or key.startswith("=") or a.kind == "select":
        return src[key]
    loc = Locale.parse(target)
    rule = loc.ordinal_form if a.kind == "selectordinal" else loc.plural_form
    several = sum(rule(n) == key for n in range(200)) > 1
    counts = lambda body: {c for c in codes(body) if c in ("#", a.name)}  # noqa: E731
    spelled = bool(counts(src["other"]) - counts(src[key]))
    return src["other"] if several and spelled else src[key]


# --- an independent, strict ICU MessageFormat reader ---------------------------------------------


class IcuSyntaxError(ValueError):
    pass


@dataclass
class Arg:
    kind: str  # "simple", "plural", "select", "selectordinal"
    name: str
    cases: list[tuple[str, list[Any]]]  # (key, message) in the order written


def read_icu(s: str) -> list[Any]:
    """A message as nodes: str (text, quotes resolved), "#" markers (as the object HASH) and
    Arg. IcuSyntaxError for anything ICU4J would refuse."""
    reader = _Reader(s)
    nodes = reader.message(plural=False, top=True)
    return nodes


HASH = object()
_NAME = re.compile(r"[^\s{}#',=]+")
_KEY = re.compile(r"=-?\d+(?:\.\d+)?|[A-Za-z_][\w-]*")


class _Reader:
    def __init__(self, s: str) -> None:
        self.s = s
        self.i = 0

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def ws(self) -> None:
        while self.peek().isspace():
            self.i += 1

    def expect(self, c: str) -> None:
        if self.peek() != c:
            raise IcuSyntaxError(f"expected {c!r} at {self.i} in {self.s!r}")
        self.i += 1

    def message(self, *, plural: bool, top: bool) -> list[Any]:
        nodes: list[Any] = []
        buf: list[str] = []

        def flush() -> None:
            if buf:
                nodes.append("".join(buf))
                buf.clear()

        while self.i < len(self.s):
            c = self.peek()
            if c == "'":
                nxt = self.peek(1)
                if nxt == "'":
                    buf.append("'")
                    self.i += 2
                elif nxt in ("{", "}") or (plural and nxt == "#"):
                    self.i += 1
                    while self.i < len(self.s):
                        if self.peek() == "'":
                            if self.peek(1) == "'":
                                buf.append("'")
                                self.i += 2
                                continue
                            self.i += 1
                            break
                        buf.append(self.peek())
                        self.i += 1
                    else:
                        raise IcuSyntaxError(f"a quote is never closed in {self.s!r}")
                else:
                    buf.append("'")
                    self.i += 1
            elif c == "{":
                flush()
                nodes.append(self.argument(plural))
            elif c == "}":
                if top:
                    raise IcuSyntaxError(f"unmatched '}}' at {self.i} in {self.s!r}")
                break
            elif c == "#" and plural:
                flush()
                nodes.append(HASH)
                self.i += 1
            else:
                buf.append(c)
                self.i += 1
        else:
            if not top:
                raise IcuSyntaxError(f"a case is never closed in {self.s!r}")
        flush()
        return nodes

    def argument(self, plural: bool) -> Arg:
        self.expect("{")
        self.ws()
        m = _NAME.match(self.s, self.i)
        if not m:
            raise IcuSyntaxError(f"no argument name at {self.i} in {self.s!r}")
        name = m.group(0)
        self.i = m.end()
        self.ws()
        if self.peek() == "}":
            self.i += 1
            return Arg("simple", name, [])
        self.expect(",")
        self.ws()
        m = re.compile(r"[A-Za-z]+").match(self.s, self.i)
        if not m:
            raise IcuSyntaxError(f"no argument type at {self.i} in {self.s!r}")
        kind = m.group(0)
        self.i = m.end()
        self.ws()
        if kind not in ("plural", "select", "selectordinal"):
            if self.peek() == ",":  # a style: up to the matching brace
                depth = 0
                while self.peek() and not (self.peek() == "}" and depth == 0):
                    depth += {"{": 1, "}": -1}.get(self.peek(), 0)
                    self.i += 1
            self.expect("}")
            return Arg("simple", name, [])
        self.expect(",")
        self.ws()
        if kind != "select":
            off = re.compile(r"offset:\s*\d+").match(self.s, self.i)
            if off:
                self.i = off.end()
                self.ws()
        cases: list[tuple[str, list[Any]]] = []
        while self.peek() != "}":
            k = _KEY.match(self.s, self.i)
            if not k:
                raise IcuSyntaxError(f"no case key at {self.i} in {self.s!r}")
            key = k.group(0)
            if key in (c for c, _ in cases):
                raise IcuSyntaxError(f"case {key!r} twice in {self.s!r}")
            self.i = k.end()
            self.ws()
            self.expect("{")
            body = self.message(plural=kind != "select", top=False)
            self.expect("}")
            self.ws()
            cases.append((key, body))
        self.expect("}")
        if "other" not in (c for c, _ in cases):
            raise IcuSyntaxError(f"{kind} {name!r} has no 'other' case in {self.s!r}")
        return Arg(kind, name, cases)


def args(nodes: list[Any]) -> list[Arg]:
    """The complex arguments of one level, by kind and name (a translation may reorder them)."""
    found = [n for n in nodes if isinstance(n, Arg) and n.kind != "simple"]
    return sorted(found, key=lambda a: (a.kind, a.name))


def skeleton(nodes: list[Any]) -> list[Any]:
    return [(a.kind, a.name, [(k, skeleton(b)) for k, b in a.cases]) for a in args(nodes)]


def codes(nodes: list[Any]) -> list[str]:
    """The placeholders of one level: ``#`` and argument names (nested ones included)."""
    return sorted(
        n.name if isinstance(n, Arg) else "#" for n in nodes if n is HASH or isinstance(n, Arg)
    )


def text(nodes: list[Any]) -> str:
    return "".join(n for n in nodes if isinstance(n, str))


def words(nodes: list[Any]) -> str:
    """The text without its HTML tags (the pseudo-translation keeps tags as they are)."""
    return re.sub(r"</?[A-Za-z][^<>]*>", "", text(nodes))


def markup(nodes: list[Any]) -> list[str]:
    return re.findall(r"</?[A-Za-z][^<>]*>", text(nodes))


def messages(content: bytes) -> dict[str, str]:
    """Every translatable string value of a JSON/ARB file by pointer (``@`` keys skipped)."""
    out: dict[str, str] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if not k.startswith("@"):
                    walk(v, f"{path}/{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}/{i}")
        elif isinstance(value, str):
            out[path] = value

    walk(json.loads(content.decode("utf-8-sig")), "")
    return out


def assert_target_plurals(source: list[Any], out: list[Any], target: str | None) -> None:
    """``out`` is ``source`` translated (text upper-cased) with the target's categories."""
    assert len(args(out)) == len(args(source))
    for a, b in zip(args(source), args(out), strict=True):
        assert (b.kind, b.name) == (a.kind, a.name)
        src = dict(a.cases)
        keys = [k for k, _ in b.cases]
        if a.kind == "select" or target is None:
            assert keys == [k for k, _ in a.cases]
        else:
            explicit = {k for k in src if k.startswith("=")}
            assert set(keys) == explicit | cldr(target, ordinal=a.kind == "selectordinal")
        for key, body in b.cases:
            origin = origin_of(a, key, target)  # a made category comes from "other"
            assert codes(body) == codes(origin), (key, body, origin)
            assert words(body) == words(origin).upper(), (key, body, origin)
            assert markup(body) == markup(origin), (key, body, origin)
            assert_target_plurals(origin, body, target)


# --- units ---------------------------------------------------------------------------------------


def test_each_case_is_a_unit_of_its_own_and_the_skeleton_is_never_sent() -> None:
    content = MESSAGES.read_bytes()
    units = {u.path: u for u in JsonI18nFormat().extract(content)}
    assert units["/onlyOne/plural:=1"].text == "One file selected"
    other = units["/onlyOne/plural:other"]
    assert other.text == "<x1/> files selected" and other.codes[1].start == "#"
    # text outside the plural is one unit, the whole argument a code in it
    inbox = units["/inbox"]
    assert re.fullmatch(r"You have <x1/> in your <g2>inbox</g2>\.", inbox.text)
    one = units["/inbox/plural:one"]
    assert one.text == "<x1/> new message from <x2/>"
    assert [one.codes[1].start, one.codes[2].start] == ["#", "{sender}"]
    assert units["/inbox/plural:=0"].text == "no new messages"
    # nested plural inside select: the select case, then its plural's cases
    assert units["/invite/select:female"].text.startswith("<x1/> invites you to her party")
    assert units["/invite/select:female/plural:other"].text == "<x1/> guests"
    assert "/invite" not in units  # a message that is only a select has no text of its own
    # an empty case is no unit
    assert "/emptyOther/select:other" not in units
    assert units["/emptyOther/select:track"].text == "song"
    assert units["/list/0/plural:one"].text == "<x1/> day left"
    for path in ICU_FILES:
        for u in fmt_for(path).extract(path.read_bytes()):
            bare = TAG.sub("", u.text)
            assert not re.search(r"[{}]|,\s*(plural|select|selectordinal)\s*,", bare), u


def test_units_of_one_message_come_in_document_order() -> None:
    content = MESSAGES.read_bytes()
    paths = [u.path for u in JsonI18nFormat().extract(content) if u.path.startswith("/party")]
    assert paths == [
        "/party/plural:=0",
        "/party/plural:=1",
        "/party/plural:one",
        "/party/plural:other",
    ]


def test_a_translation_cannot_move_words_between_cases() -> None:
    content = MESSAGES.read_bytes()
    f = JsonI18nFormat()
    units = f.extract(content)
    translations = [
        "<x1/> Elementos" if u.path == "/onlyOne/plural:other" else u.text for u in units
    ]
    out = json.loads(f.render(content, translations))
    assert out["onlyOne"] == "{count, plural, =1 {One file selected} other {# Elementos}}"
    before = json.loads(content)
    assert {k: v for k, v in out.items() if k != "onlyOne"} == {
        k: v for k, v in before.items() if k != "onlyOne"
    }


# --- identity ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_JSON, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_identity_round_trip_is_byte_equal(path: Path) -> None:
    content = path.read_bytes()
    f = fmt_for(path)
    units = f.extract(content)
    assert f.render(content, [u.text for u in units]) == content


# --- the target's categories ---------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("path", ICU_FILES, ids=lambda p: p.name)
def test_plurals_carry_exactly_the_targets_cldr_categories(path: Path, target: str) -> None:
    content = path.read_bytes()
    f = fmt_for(path)
    out = f.render(content, [shout(u.text) for u in f.extract(content)], target_lang=target)
    before, after = messages(content), messages(out)
    assert list(after) == list(before)
    seen = 0
    for key, value in before.items():
        source, translated = read_icu(value), read_icu(after[key])  # both parse as ICU
        assert_target_plurals(source, translated, target)
        seen += len(args(source))
    assert seen  # every file here has ICU arguments


def test_explicit_forms_stay_and_made_categories_copy_the_translated_other() -> None:
    content = MESSAGES.read_bytes()
    f = JsonI18nFormat()
    units = f.extract(content)
    translations = {
        "/onlyOne/plural:=1": "Wybrano jeden plik",
        "/onlyOne/plural:other": "Wybrano plików: <x1/>",
    }
    out = f.render(content, [translations.get(u.path, u.text) for u in units], target_lang="pl")
    (plural,) = args(read_icu(json.loads(out)["onlyOne"]))
    cases = dict(plural.cases)
    assert [k for k, _ in plural.cases] == ["=1", "one", "few", "many", "other"]
    assert cases["=1"] == ["Wybrano jeden plik"]
    for key in ("one", "few", "many", "other"):
        assert cases[key] == ["Wybrano plików: ", HASH]
    # written in the file's own spacing: "key {…}"
    assert json.loads(out)["onlyOne"].startswith("{count, plural, =1 {Wybrano jeden plik} one {")


def test_a_source_with_only_explicit_one_and_other_gets_every_target_category() -> None:
    content = (FIXTURES / "arb" / "finamp_app_en.arb").read_bytes()
    f = ArbFormat()
    out = f.render(content, [u.text for u in f.extract(content)], target_lang="ar")
    after = json.loads(out)
    assert after["@@locale"] == "ar"
    (plural,) = args(read_icu(after["downloadCount"]))
    assert {k for k, _ in plural.cases} == {"=1"} | cldr("ar")
    for key, body in plural.cases:
        assert codes(body) == ["count"], key
    # metadata untouched
    assert after["@downloadCount"] == json.loads(content)["@downloadCount"]


def test_ordinals_use_the_targets_ordinal_categories() -> None:
    content = MESSAGES.read_bytes()
    f = JsonI18nFormat()
    units = f.extract(content)
    for target in ("ru", "cy", "fr"):
        out = json.loads(f.render(content, [u.text for u in units], target_lang=target))
        (ordinal,) = args(read_icu(out["place"]))
        assert ordinal.kind == "selectordinal"
        assert {k for k, _ in ordinal.cases} == cldr(target, ordinal=True)


def test_select_cases_are_kept_and_only_their_text_is_translated() -> None:
    content = MESSAGES.read_bytes()
    f = JsonI18nFormat()
    out = json.loads(
        f.render(content, [shout(u.text) for u in f.extract(content)], target_lang="ru")
    )
    source = json.loads(content)
    # the empty other{} and the quoted '{name}' that follows it are as they were
    assert out["emptyOther"] == (
        "DELETE THE {type, select, album {ALBUM} track {SONG} other {}} '{name}' FROM THIS DEVICE?"
    )
    (select,) = args(read_icu(out["invite"]))
    (before,) = args(read_icu(source["invite"]))
    assert [k for k, _ in select.cases] == [k for k, _ in before.cases]
    for key, body in select.cases:  # the plural nested in each case gets Russian's categories
        (nested,) = args(body)
        assert nested.kind == "plural" and {k for k, _ in nested.cases} == cldr("ru")
        assert words(body) == words(dict(before.cases)[key]).upper()


def test_arb_select_with_empty_other_and_apostrophe_quoting() -> None:
    path = FIXTURES / "arb" / "finamp_app_en.arb"
    content = path.read_bytes()
    f = ArbFormat()
    units = {u.path: u for u in f.extract(content)}
    prompt = units["/deleteDownloadsPrompt"]
    assert prompt.text == "Are you sure you want to delete the <x1/> <x2/> from this device?"
    assert prompt.codes[2].start == "'{itemName}'"
    assert units["/deleteDownloadsPrompt/select:track"].text == "song"
    assert "/deleteDownloadsPrompt/select:other" not in units
    out = f.render(content, [shout(u.text) for u in f.extract(content)], target_lang="pl")
    value = json.loads(out)["deleteDownloadsPrompt"]
    assert "other{}} '{itemName}' FROM THIS DEVICE?" in value
    read_icu(value)


def test_no_target_changes_no_category() -> None:
    content = MESSAGES.read_bytes()
    f = JsonI18nFormat()
    out = f.render(content, [shout(u.text) for u in f.extract(content)])
    before, after = messages(content), messages(out)
    for key, value in before.items():
        source, translated = read_icu(value), read_icu(after[key])
        assert skeleton(translated) == skeleton(source)
        assert_target_plurals(source, translated, None)


# --- hostile engines and odd input ---------------------------------------------------------------


@pytest.mark.parametrize("target", [None, "ru", "ar"])
@pytest.mark.parametrize("path", ICU_FILES, ids=lambda p: p.name)
def test_a_hostile_translation_still_gives_valid_icu(path: Path, target: str | None) -> None:
    content = path.read_bytes()
    f = fmt_for(path)
    out = f.render(content, [hostile(u) for u in f.extract(content)], target_lang=target)
    before, after = messages(content), messages(out)
    assert list(after) == list(before)
    for key, value in before.items():
        source, translated = read_icu(value), read_icu(after[key])
        if target is None:
            assert skeleton(translated) == skeleton(source)
        for a, b in zip(args(source), args(translated), strict=True):
            assert (a.kind, a.name) == (b.kind, b.name)
            for case, body in b.cases:  # no placeholder lost, none added
                origin = origin_of(a, case, target)
                assert codes(body) == codes(origin), (key, case)
                if text(origin).strip():
                    assert "'{' a {b} #" in text(body)  # the engine's braces are text
                    if "<" in value:  # HTML in the message: the engine's markup is text
                        assert "&lt;script>alert('x')&lt;/script> & &amp;amp;" in text(body)
                    else:
                        assert "<script>alert('x')</script> & &amp;" in text(body)


def test_nesting_too_deep_is_a_document_error() -> None:
    value = "{a, select, x {" * 40 + "deep" + "} other {}}" * 40
    content = json.dumps({"deep": value}).encode()
    for call in (
        lambda: JsonI18nFormat().extract(content),
        lambda: JsonI18nFormat().render(content, []),
    ):
        with pytest.raises(DocumentError, match="nests plural/select"):
            call()
    shallow = json.dumps({"ok": "{a, select, x {" * 8 + "deep" + "} other {}}" * 8}).encode()
    units = JsonI18nFormat().extract(shallow)
    assert [u.text for u in units] == ["deep"]
    assert JsonI18nFormat().render(shallow, ["tief"], target_lang="ru") == shallow.replace(
        b"deep", b"tief"
    )


def test_apostrophes_braces_and_hashes_in_a_translation_stay_text() -> None:
    content = json.dumps({"m": "Type '{' then {n, plural, one {# x} other {# xs}}"}).encode()
    f = JsonI18nFormat()
    units = f.extract(content)
    assert [u.text for u in units] == ["Type <x1/> then <x2/>", "<x1/> x", "<x1/> xs"]
    assert units[0].codes[1].start == "'{'"
    out = f.render(content, ["Tapez <x1/>' puis l'<x2/> {'}", "l'<x1/> #1 'x", "<x1/> xs"])
    nodes = read_icu(json.loads(out)["m"])
    assert text(nodes) == "Tapez {' puis l' {'}"
    (plural,) = args(nodes)
    assert dict(plural.cases)["one"] == ["l'", HASH, " #1 'x"]


def test_plurals_nested_in_other_cases_cannot_grow_without_bound() -> None:
    # refused when read, whatever the target: a file accepted at upload can be rendered
    # (Arabic would make 6 ** 12 copies)
    nested = "{n, plural, one {x} other {" * 12 + "y" + "}}" * 12
    content = json.dumps({"v": nested}).encode()
    f = JsonI18nFormat()
    for call in (lambda: f.extract(content), lambda: f.render(content, [], target_lang="ar")):
        with pytest.raises(DocumentError, match=r"nests plurals 12 levels deep.* grow past"):
            call()
    # a plural inside a select inside a plural ... (31 arguments, within the depth limit)
    mixed = "".join(
        "{n, plural, one {x} other {" if i % 2 == 0 else "{g, select, male {y} other {"
        for i in range(31)
    )
    with pytest.raises(DocumentError, match="nests plurals 16 levels deep"):
        f.extract(json.dumps({"v": mixed + "z" + "}}" * 31}).encode())
    # what is accepted renders in every target: the worst case is bounded from the source
    four = json.dumps({"v": "{n, plural, one {x} other {" * 4 + "y" + "}}" * 4}).encode()
    units = f.extract(four)
    assert len(f.render(four, [u.text for u in units], target_lang="ar")) < icu.MAX_READ
    two = json.dumps({"v": "{n, plural, one {x} other {" * 2 + "y" + "}}" * 2}).encode()
    out = json.loads(f.render(two, [u.text for u in f.extract(two)], target_lang="ar"))
    (outer,) = args(read_icu(out["v"]))
    assert len(outer.cases) == 6 and all(len(args(b)) == 1 for k, b in outer.cases if k != "one")


def test_malformed_icu_is_plain_text_and_round_trips() -> None:
    for value in (
        "{count, plural, one {# item}",  # never closed
        "{count, plural, one # item}",  # no case braces
        "{count, plural,}",  # no cases
        "}} {{ { x",
    ):
        content = json.dumps({"m": value, "n": "{n, plural, one {#} other {#}}"}).encode()
        f = JsonI18nFormat()
        units = f.extract(content)
        assert f.render(content, [u.text for u in units]) == content
        out = f.render(content, [shout(u.text) for u in units], target_lang="ru")
        assert set(json.loads(out)) == {"m", "n"}
        read_icu(json.loads(out)["n"])


SYNTAX = [
    "{n, plural, one {", "{n, plural, =0 {", "{g, select, a {", "{n, selectordinal, two {",
    "} other {", "}}", "}", "{", "#", "'", "''", "'{'", "{name}", "<b>", "</b>", "%s", " ",
    "word", "Größe", "日本語", "offset:1 ", "=1 {", "few {",
]  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(SYNTAX), max_size=20).map("".join), st.sampled_from(TARGETS))
def test_any_value_round_trips_and_valid_icu_stays_valid(value: str, target: str) -> None:
    content = json.dumps({"v": value, "p": "{n, plural, one {#} other {#}}"}).encode()
    f = JsonI18nFormat()
    units = f.extract(content)
    assert f.render(content, [u.text for u in units]) == content
    for translations in ([shout(u.text) for u in units], [hostile(u) for u in units]):
        out = json.loads(f.render(content, translations, target_lang=target))
        try:
            source = read_icu(value)
        except IcuSyntaxError:
            continue  # not ICU: nothing more to hold
        translated = read_icu(out["v"])
        assert [(a.kind, a.name) for a in args(translated)] == [
            (a.kind, a.name) for a in args(source)
        ]


# --- XLIFF ---------------------------------------------------------------------------------------

XLIFF1 = FIXTURES / "icu" / "angular_messages.xlf"
XLIFF2 = FIXTURES / "icu" / "app_strings_v2.xlf"


def _target_message(target: Any) -> str:
    """A target's content as an ICU message, each inline element as the character ``☐``."""
    return (target.text or "") + "".join("☐" + (child.tail or "") for child in target)


def _targets(out: bytes) -> dict[str, Any]:
    root = etree.fromstring(out)
    found = {}
    for el in root.iter():
        if isinstance(el.tag, str) and etree.QName(el).localname in ("trans-unit", "unit"):
            (target,) = [t for t in el.iter() if etree.QName(t).localname == "target"]
            found[el.get("id")] = target
    return found


def test_xliff_icu_sources_are_cut_per_case() -> None:
    f = XliffFormat()
    units = {u.path: u for u in f.extract(XLIFF1.read_bytes())}
    assert units["ng2.template#minutes/plural:=0"].text == "just now"
    other = units["ng2.template#minutes/plural:other"]
    assert other.text == "<x1/> minutes ago"
    assert units["ng2.template#cart"].text == "You have <x1/> in your cart"
    assert units["ng2.template#gender/select:female"].text == "female"
    assert units["ng2.template#updated"].text == "Updated <x1/>"  # no ICU text: as before
    assert units["ng2.template#bold"].text == "Plain <g1>bold {braces}</g1> text"
    units2 = {u.path: u for u in f.extract(XLIFF2.read_bytes())}
    assert units2["app/files/1/plural:one"].text == "<x1/> file"
    assert units2["app/rank/1"].text == "You came <x1/>"
    assert units2["app/title/1"].text == "Settings <x1/>"


@pytest.mark.parametrize("path", [XLIFF1, XLIFF2], ids=lambda p: p.name)
def test_xliff_identity_targets_equal_sources(path: Path) -> None:
    content = path.read_bytes()
    f = XliffFormat()
    out = f.render(content, [u.text for u in f.extract(content)])
    root = etree.fromstring(out)
    targets = list(root.iter("{*}target"))
    assert len(targets) == len(list(root.iter("{*}source")))
    for target in targets:
        source = target.getparent().find("{*}source")
        assert target.text == source.text
        assert [etree.tostring(c) for c in target] == [etree.tostring(c) for c in source]


@pytest.mark.parametrize("target", TARGETS)
def test_xliff_plurals_carry_the_targets_categories(target: str) -> None:
    for path in (XLIFF1, XLIFF2):
        content = path.read_bytes()
        f = XliffFormat()
        units = f.extract(content)
        out = f.render(content, [shout(u.text) for u in units], target_lang=target)
        targets = _targets(out)
        root = etree.fromstring(content)
        for el in root.iter():
            if not (isinstance(el.tag, str) and etree.QName(el).localname == "source"):
                continue
            holder = el.getparent()
            if etree.QName(holder).localname == "segment":
                holder = holder.getparent()
            source = _target_message(el)
            if "{" not in source or ("plural" not in source and "select" not in source):
                continue
            translated = read_icu(_target_message(targets[holder.get("id")]))
            assert_target_plurals(read_icu(source), translated, target)
            # the inline elements come back as elements (copied into made categories)
            for case_key, body in args(translated)[0].cases:
                origin = dict(args(read_icu(source))[0].cases).get(case_key)
                origin = origin or dict(args(read_icu(source))[0].cases)["other"]
                assert text(body).count("☐") == text(origin).count("☐")
    out = XliffFormat().render(
        XLIFF1.read_bytes(), [shout(u.text) for u in XliffFormat().extract(XLIFF1.read_bytes())]
    )
    minutes = _targets(out)["minutes"]
    assert [x.get("id") for x in minutes] == ["INTERPOLATION"]


def test_xliff_hostile_translation_still_parses() -> None:
    for path in (XLIFF1, XLIFF2):
        content = path.read_bytes()
        f = XliffFormat()
        units = f.extract(content)
        translations = [hostile(u) + "\ue000\x01" for u in units]
        out = f.render(content, translations, target_lang="ru")
        assert len(f.extract(out)) == len(units)
        for target in _targets(out).values():
            message = _target_message(target)
            if "plural" in message or "select" in message:
                read_icu(message)
