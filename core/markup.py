"""What counts as markup in a translation: the output check's vocabulary, in one place.

An engine talked into injecting markup (a prompt-injected LLM) produces HTML tags, event
handlers, and links or images to ``javascript:``/``vbscript:``/``data:text/html`` URLs, in
HTML syntax or in Markdown's. :func:`markup` lists those items of a text so the worker can flag
an output that has items its source does not (:mod:`mtfleet.workers.translation`), and glossary
terms are refused when they carry a script URL (:mod:`mtfleet.core.glossary.terms`).

URLs are judged the way a browser reads them: character references decoded first
(``jav&#x61;script:`` is ``javascript:``; HTML unescaping, the standard library's), then ASCII
whitespace and control characters dropped (a browser ignores a tab or a newline inside a
scheme), then lower-cased. A ``data:`` URL counts unless it is a raster image (SVG images may
carry script).
"""

from __future__ import annotations

import html
import re

# A tag is ``<name ...>`` or ``</name>``; it counts when the name is an HTML element (SVG and
# MathML roots included), when it is a closing tag, or when it carries attributes, so a bare
# ``<word>`` (a placeholder, or the cost-model engine's ``<es>`` prefix) is text. Inside counted
# tags, event-handler attributes and script URLs count on their own.
_TAG = re.compile(r"""<(/?)([^\W\d_][\w:.-]*)((?:[^<>"']|"[^"]*"|'[^']*')*)>""")
_HANDLER = re.compile(r"(?:^|[\s/\"'])(on[a-z]+)\s*=", re.IGNORECASE)
# Markdown link and image destinations, inline (``](url``) or reference (``]: url``), and
# autolinks (``<scheme:...>``): three patterns, each run only on a text holding its marker (one
# alternation of the three scanned every text at each position: 2 µs of the worker's 3 µs per
# output with a ``<`` and a ``:``, measured on the benchmark's segments).
_MD_INLINE = re.compile(r"\]\(\s*<?([^\s)>]*)")
_MD_REFERENCE = re.compile(r"^\s*\[[^\]]*\]:\s*<?(\S*)", re.MULTILINE)
_AUTOLINK = re.compile(r"<([A-Za-z][\w+.-]*:[^\s<>]*)>")
_INVISIBLE = re.compile(r"[\x00-\x20\x7f]+")
_SCRIPT_SCHEME = re.compile(
    r"(javascript|vbscript|data):(?<=data:)(?!image/(?:png|gif|jpe?g|webp|avif|bmp)[;,])"
    r"|(javascript|vbscript):"
)
_ELEMENT_NAMES = """
    a abbr address applet area article aside audio b base basefont bdi bdo blink blockquote
    body br button canvas caption center cite code col colgroup data datalist dd del details
    dfn dialog dir div dl dt em embed fieldset figcaption figure font footer form frame
    frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe image img input ins kbd
    keygen label legend li link main map mark marquee math menu meta meter nav noembed noframes
    noscript object ol optgroup option output p param picture plaintext portal pre progress q
    rp rt ruby s samp script search section select slot small source span strike strong style
    sub summary sup svg table tbody td template textarea tfoot th thead time title tr track tt
    u ul var video wbr xmp
"""
HTML_ELEMENTS = frozenset(_ELEMENT_NAMES.split())


def script_schemes(text: str) -> set[str]:
    """The script URL schemes in ``text`` as a browser reads it (``javascript:``,
    ``vbscript:``, ``data:``), after decoding character references."""
    if ":" not in text and "&" not in text:
        return set()
    plain = _INVISIBLE.sub("", html.unescape(text)).lower()
    return {f"{m.group(1) or m.group(2)}:" for m in _SCRIPT_SCHEME.finditer(plain)}


def markup(text: str) -> set[str]:
    """The markup items of a text: ``<tag>`` names (lower case), ``on*=`` handlers, and the
    schemes of script URLs in tags' attributes and in Markdown links, images and autolinks
    (``javascript:``...)."""
    items: set[str] = set()
    if "<" in text:
        for closing, name, attrs in _TAG.findall(text):
            name = name.lower()
            if not (name in HTML_ELEMENTS or closing or attrs.strip(" /")):
                continue
            items.add(f"<{name}>")
            if attrs:
                items.update(f"{h.lower()}=" for h in _HANDLER.findall(attrs))
                items.update(script_schemes(attrs))
    # (a destination needs "](" or "]:", an autolink "<" and ":": plain ``in`` tests first, each
    # pattern only where its marker occurs)
    urls: list[str] = []
    if "](" in text:
        urls += _MD_INLINE.findall(text)
    if "]:" in text:
        urls += _MD_REFERENCE.findall(text)
    if ":" in text and "<" in text:
        urls += _AUTOLINK.findall(text)
    for url in urls:
        items.update(f"link to {s}" for s in script_schemes(url))
    return items
