"""Template syntax and protected patterns (issue 40 item 5): Liquid, Jinja and Handlebars tags,
command-line flags, backtick code in Markdown's HTML blocks, ``notranslate`` and a request's
own protected patterns are codes, never text, and come back byte for byte.

Each document goes the way production takes it: the format's units, the API's sentences
(:func:`plan`), the worker's protection (:func:`prepare`) around an engine that shouts every
letter it sees, the worker's restore, then the format's render."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mtfleet.core import patterns
from mtfleet.core.glossary import Glossary, validate
from mtfleet.core.glossary.terms import content_version
from mtfleet.core.guidance import cache_variant
from mtfleet.core.patterns import BadPattern, ProtectedPatterns
from mtfleet.core.schemas import GlossaryCreate, TranslateCreate
from mtfleet.formats import for_name
from mtfleet.formats.base import TAG, Code
from mtfleet.formats.pipeline import assemble, plan, protect
from mtfleet.workers.checks import prepare

JEKYLL = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "documents"
    / "markdown"
    / "jekyll_docs_front-matter.md"
)


def shout(text: str) -> str:
    """An engine: every letter outside the tags it is given upper-cased."""
    out, pos = [], 0
    for m in TAG.finditer(text):
        out += [text[pos : m.start()].upper(), m.group(0)]
        pos = m.end()
    return "".join([*out, text[pos:].upper()])


def through_fleet(fmt: str, content: bytes, extra: ProtectedPatterns | None = None) -> str:
    """``content`` translated by :func:`shout` as the fleet does it; also what the engine saw."""
    f = for_name(fmt)
    units = f.extract(content)
    p = plan(units, "en")
    done = []
    for segment in p.segments:
        prep = prepare(segment, None, patterns=extra)
        done.append(prep.restore(shout(prep.text)))
    return f.render(content, assemble(p, done)).decode()


# --- template tags and flags are protected spans ---------------------------------------------


@pytest.mark.parametrize(
    "tag",
    [
        "{% raw %}",
        "{% endraw %}",
        "{{ page.title }}",
        '{{ "/assets" | relative_url }}',
        "{{ '/docs/installation/windows/' | relative_url }}",
        "{{#each items}}",
        "{{/each}}",
        "{{{body}}}",
        "{# a comment #}",
        "{%- if user -%}",
        "{% raw %}{{ page.food }} and {% if x %}{% endraw %}",
        "{% comment %}Not shown {{ x }}{% endcomment %}",
        "--unpublished",
        "--format=json",
    ],
)
def test_template_tags_and_flags_are_one_standalone_code(tag: str) -> None:
    text, codes = protect(f"Before {tag} after.", 1)
    assert text == "Before <x1/> after."
    assert codes == {1: Code(tag)}


def test_a_url_stops_where_a_template_output_starts() -> None:
    text, codes = protect("See https://shop.example/{{ page.url }} now.", 1)
    assert text == "See <x1/><x2/> now."
    assert [c.start for c in codes.values()] == ["https://shop.example/", "{{ page.url }}"]


def test_a_unit_of_template_tags_alone_is_no_segment() -> None:
    for fmt, content in [
        ("html", b"<p>{{ page.title }}</p><p>{% include footer.html %}</p><p>Hello</p>"),
        ("yaml", b'en:\n  title: "{{ site.title }}"\n  greeting: "Hello {{ name }}"\n'),
    ]:
        f = for_name(fmt)
        p = plan(f.extract(content), "en")
        assert len(p.segments) == 1, (fmt, p.segments)


@pytest.mark.parametrize(
    ("fmt", "content"),
    [
        (
            "html",
            "<p>Hello {{ user.name }}, {% if cart %}see your cart{% endif %} "
            "or run <b>--dry-run</b>.</p>",
        ),
        ("yaml", 'en:\n  welcome: "Welcome to {{ site.title }}, {{#if vip}}friend{{/if}}!"\n'),
        ("markdown", "Hello {{ page.author | escape }}, {% raw %}{{ x }}{% endraw %} is kept.\n"),
    ],
)
def test_template_tags_come_back_byte_for_byte_in_every_format(fmt: str, content: str) -> None:
    out = through_fleet(fmt, content.encode())
    tags = re.findall(r"\{%.*?%\}|\{\{.*?\}\}|--[a-z-]+", content)
    assert tags and all(out.count(t) == content.count(t) for t in tags), out
    assert "HELLO" in out or "WELCOME" in out


# --- Markdown: raw blocks, HTML blocks, the Jekyll page --------------------------------------


def test_a_raw_block_across_markdown_blocks_is_kept_whole() -> None:
    content = (
        "Intro.\n\n{% raw %}\nSome {{ x }} text\n\nMore **bold** text\n{% endraw %}\n\n"
        "{% comment %}\nA note to editors.\n{% endcomment %}\n\nThe end.\n"
    )
    out = through_fleet("markdown", content.encode())
    assert out == content.replace("Intro.", "INTRO.").replace("The end.", "THE END.")


def test_backticks_and_notranslate_in_an_html_block_are_code() -> None:
    content = (
        '<div class="note">\n  <p>Run `jekyll serve --watch` or ``a `b` c`` with --drafts, '
        'see <span class="notranslate">Jekyll Admin</span> and '
        '<span translate="no">Liquid</span>.</p>\n</div>\n\n'
        'Keep <span class="notranslate">Brand X</span> here.\n'
    )
    out = through_fleet("markdown", content.encode())
    for code in ("`jekyll serve --watch`", "``a `b` c``", "--drafts", "Jekyll Admin", "Liquid"):
        assert code in out
    assert "RUN" in out and "BRAND X" not in out and "Brand X" in out and "KEEP" in out


def test_notranslate_is_honoured_in_an_html_document() -> None:
    content = b'<p>Buy <span class="notranslate">Acme Turbo</span> today.</p>'
    want = '<p>BUY <span class="notranslate">Acme Turbo</span> TODAY.</p>'
    assert through_fleet("html", content) == want


def test_the_jekyll_page_keeps_every_template_tag_and_code() -> None:
    content = JEKYLL.read_bytes()
    source = content.decode()
    out = through_fleet("markdown", content)
    for tag in set(re.findall(r"\{%.*?%\}|\{\{.*?\}\}", source)):
        assert out.count(tag) == source.count(tag), tag
    # the raw block with its fenced Liquid, byte for byte
    raw = source[source.index("{% raw %}") : source.index("{% endraw %}") + len("{% endraw %}")]
    assert raw in out
    # backtick code and flags in the HTML note block are code, the prose around them is text
    assert "RUN `jekyll serve` OR `jekyll build`" in out
    assert "WITH THE `--unpublished` SWITCH" in out
    for segment in plan(for_name("markdown").extract(content), "en").segments:
        assert "`" not in segment and "{%" not in segment, segment


def test_an_html_element_across_blank_lines_is_read_to_its_end_tag() -> None:
    """Jekyll's pages (kramdown) put a blank line and indented prose inside a table cell;
    CommonMark would end the HTML block there and read the prose as code (left English)."""
    content = (
        "<table>\n  <tr>\n    <td>\n      <p>\n\n        Use the <code>layout</code> file\n"
        "        for this page.\n\n      </p>\n    </td>\n  </tr>\n</table>\n\n"
        "    real indented code\n\nAfter.\n"
    )
    out = through_fleet("markdown", content.encode())
    assert out == (
        content.replace("Use the", "USE THE")
        .replace("file\n        for this page.", "FILE\n        FOR THIS PAGE.")
        .replace("After.", "AFTER.")
    )


def test_an_html_element_that_meets_markdown_before_its_end_is_left_to_commonmark() -> None:
    content = "<div>\n<p>Inside</p>\n\nA *paragraph* here.\n\n    code\n\n</div>\n"
    out = through_fleet("markdown", content.encode())
    assert out == content.replace("Inside", "INSIDE").replace(
        "A *paragraph* here", "A *PARAGRAPH* HERE"
    )


def test_every_cell_of_the_jekyll_tables_is_text() -> None:
    source = JEKYLL.read_text()
    segments = "\n".join(plan(for_name("markdown").extract(JEKYLL.read_bytes()), "en").segments)
    for prose in ("If set, this specifies the layout file", "A date here overrides the date"):
        assert prose in source and prose in segments, prose


# --- protected patterns -------------------------------------------------------------------------


def test_a_requests_patterns_are_protected_like_spans() -> None:
    colours = ProtectedPatterns([r"§[0-9a-fk-or]", r"\[[A-Z_]+\]"])
    prep = prepare("§aWelcome §lhome, [NAME]! Visit https://a.example", None, patterns=colours)
    assert prep.text == "<x1/>Welcome <x2/>home, <x3/>! Visit <x4/>"
    assert prep.restore(shout(prep.text)) == "§aWELCOME §lHOME, [NAME]! VISIT https://a.example"


def test_overlapping_patterns_keep_the_leftmost_longest_match() -> None:
    both = ProtectedPatterns([r"\[[A-Z]+", r"\[[A-Z]+\]"])
    text, codes = protect("Hi [NAME] and <g1>[X]</g1>", 2, both.find)
    assert text == "Hi <x2/> and <g1><x3/></g1>"
    assert [c.start for c in codes.values()] == ["[NAME]", "[X]"]


@pytest.mark.parametrize(
    ("found", "says"),
    [
        (["(a"], "protected_patterns[0] '(a' is not a regular expression RE2 reads"),
        (["ok", r"(a)\1"], r"protected_patterns[1] '(a)\\1' is not a regular expression"),
        ([r"(?<=x)y"], "is not a regular expression RE2 reads"),
        (["x*"], "matches the empty text"),
        (["a" * 201], "has 201 characters; the limit is 200"),
        ([f"p{n}" for n in range(21)], "21 patterns; the limit is 20"),
    ],
)
def test_bad_patterns_are_refused_naming_them(found: list[str], says: str) -> None:
    with pytest.raises(BadPattern, match=re.escape(says)):
        patterns.check(found)


def test_a_bad_pattern_is_a_validation_error_on_requests_and_glossaries() -> None:
    with pytest.raises(ValueError, match=r"pattern\[0\] '\(a' is not a regular expression"):
        TranslateCreate(texts=["Hi"], target_lang="es", protected_patterns=["(a"])
    with pytest.raises(ValueError, match="matches the empty text"):
        GlossaryCreate(name="g", source_lang="en", target_lang="es", protected_patterns=["a?"])


def test_a_catastrophic_pattern_runs_in_linear_time() -> None:
    """``(a+)+$`` backtracks exponentially in Python's ``re``: RE2 has no backtracking (the
    text is long enough that ``re`` would not finish in a lifetime)."""
    nested = ProtectedPatterns([r"(a+)+$"])
    assert nested.find("a" * 5_000 + "!") == []


def test_a_glossary_carries_patterns_in_its_version() -> None:
    def glossary(protected: list[str], found: list[str]) -> Glossary:
        return validate(
            name="game",
            source_lang="en",
            target_lang="es",
            entries=[],
            protected=protected,
            protected_patterns=found,
            max_terms=10,
            max_term_chars=100,
        )

    plain = glossary(["Steve"], [])
    assert plain.version == content_version("en", "es", {}, ["Steve"])  # as before the item
    coloured = glossary(["Steve"], ["§[0-9a-f]", "§[0-9a-f]"])
    assert coloured.protected_patterns == ["§[0-9a-f]"] and coloured.pattern_count == 1
    assert coloured.version != plain.version
    only = glossary([], ["§[0-9a-f]"])  # patterns alone make a glossary
    assert only.entry_count == only.protected_count == 0
    with pytest.raises(BadPattern, match=r"protected_patterns\[0\] '\[z-a\]'"):
        glossary(["Steve"], ["[z-a]"])


def test_patterns_are_part_of_the_cache_variant() -> None:
    assert cache_variant(None, None, None, None) is None
    one = cache_variant(None, None, None, ["§[0-9a-f]"])
    assert one is not None and one != cache_variant(None, None, None, [r"\[[A-Z]+\]"])
    assert one == cache_variant(None, None, None, ["§[0-9a-f]", "§[0-9a-f]"])
    assert cache_variant("v1", None, None, ["§[0-9a-f]"]) != cache_variant("v1", None)
