"""The LibreTranslate API surface, under ``/libretranslate`` on the API's port: a LibreTranslate
client given ``http://HOST:8000/libretranslate`` as its server works unchanged, with an mtfleet
API key as its ``api_key``.

``/translate`` (JSON or form, ``q`` a string or, in JSON, a list; ``source`` may be ``auto``;
``format`` text or html), ``/detect``, ``/languages``, ``/translate_file`` and the download
link it answers with, ``/frontend/settings``. Every route is a thin adapter over the drop-in
path (:mod:`mtfleet.api.dropin`); its errors are LibreTranslate's
(:mod:`mtfleet.api.libretranslate.errors`). What each field does here: docs/libretranslate.md.
"""

from __future__ import annotations

from mtfleet.api.libretranslate.errors import SURFACE, Preflight
from mtfleet.api.libretranslate.routes import router

PREFIX = SURFACE.prefixes[0]

__all__ = ["PREFIX", "SURFACE", "Preflight", "router"]
