"""Template syntax in documents (Liquid, Jinja, Handlebars, Nunjucks, Django): the spans a
page's generator reads and its reader never sees. Its own module, free of the server's
dependencies, since the client CLI's Markdown reader needs :data:`TEMPLATE_BLOCK` too."""

from __future__ import annotations

import re

#: A ``{% raw %}`` or ``{% comment %}`` block is one span with what it
#: holds (template source shown as it is, or a comment); a tag or an output (``{% if x %}``,
#: ``{{ "/assets" | relative_url }}``, ``{{#each items}}``, ``{{{html}}}``, ``{# note #}``) is
#: one span, bounded at ``TEMPLATE_CHARS`` characters (a longer one is no tag).
TEMPLATE_CHARS = 500
_TEMPLATE_BLOCK = r"""\{%-?[ \t\r\n]*(?P<block>raw|comment)[ \t\r\n]*-?%\}[\s\S]*?
        \{%-?[ \t\r\n]*end(?P=block)[ \t\r\n]*-?%\}"""
#: A ``{% raw %}`` or ``{% comment %}`` block, what it holds included.
TEMPLATE_BLOCK = re.compile(_TEMPLATE_BLOCK, re.VERBOSE)
#: Every template span, one alternation (a verbose pattern), for the protected spans of
#: :mod:`mtfleet.formats.pipeline`.
TEMPLATE = rf"""{_TEMPLATE_BLOCK}
    |\{{\{{\{{[^{{}}]{{1,{TEMPLATE_CHARS}}}\}}\}}\}}
    |\{{\{{[^{{}}]{{1,{TEMPLATE_CHARS}}}\}}\}}
    |\{{%[^{{}}]{{1,{TEMPLATE_CHARS}}}?%\}}
    |\{{\#[^{{}}]{{1,{TEMPLATE_CHARS}}}?\#\}}"""
