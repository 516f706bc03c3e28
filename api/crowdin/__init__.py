"""Crowdin's Custom MT surface, under ``/crowdin`` on the API's port: a Crowdin (or Crowdin
Enterprise) organisation installs the fleet as a private Crowdin app, by the manifest URL
``https://HOST/crowdin/<api key>/manifest.json``, and its projects pre-translate with it or
show its suggestions in the Editor. What to set where: docs/localization-platforms.md.

Crowdin's contract, as its developer documentation states it (read 2026-12 through the
project's search tool; the pages are Crowdin's, the words here ours):

* **The request** (developer.crowdin.com/crowdin-apps-module-custom-mt/, also
  support.crowdin.com/developer/crowdin-apps-module-custom-mt and
  support.crowdin.com/custom-mt/): Crowdin POSTs to the app's ``baseUrl`` joined with the
  ``custom-mt`` module's ``url``, the languages in the query string:
  ``{baseUrl}/translate?source=en&target=uk&project_id=727186``, a JSON body
  ``{"strings": ["Start", "Next"]}`` of at most the module's ``batchSize`` strings. With the
  module's ``withContext`` each string is instead an object (the Crowdin apps SDK's
  ``CustomMtString``, ``@crowdin/app-project-module`` ``out/modules/custom-mt/types.d.ts``:
  ``id``, ``projectId``, ``fileId``, ``identifier``, ``context``, ``maxLength``,
  ``isHidden``, ``text`` (a string, or a plural string's forms by name), ``isPlural``,
  ``pluralForm``); the SDK also reads a ``stringsUrl`` in place of ``strings``.
* **The answer**: ``{"data": {"translations": ["Start", "Nächste"]}}``, one translation per
  string, in the order sent; an error is ``{"error": {"message": "..."}}``.
* **Languages** are Crowdin's language ids (``de``, ``es-ES``, ``pt-BR``, ``zh-CN``,
  ``zh-TW``, ``es-419``...): Crowdin tells an app to use its codes or to map them in the
  app's settings (support.crowdin.com/custom-mt/, "language mapping").
* **Non-translatable parts** (tags, placeholders) arrive masked as
  ``<span class="notranslate">0</span>`` and must come back unchanged
  (support.crowdin.com/custom-mt/).
* **Auth**: Crowdin signs its own request, ``Authorization: Bearer <app JWT>`` (or a
  ``jwtToken`` query parameter, in the older pages), with the secret of an OAuth app; an app
  whose descriptor says ``"authentication": {"type": "none"}`` has none
  (developer.crowdin.com/crowdin-apps-app-descriptor/: ``none`` or ``crowdin_app``; the
  ``installed`` event is for ``crowdin_app`` only: developer.crowdin.com/crowdin-apps-
  installation/). A private app is installed by pasting its manifest URL (Account Settings >
  Apps > Install Private App; Organization Settings > Apps in Enterprise); its ``baseUrl``
  must be ``https://`` and unique to the app.

How the fleet maps it:

* **Auth onto the fleet's API keys**: Crowdin cannot send a header of ours, and its JWT
  proves only Crowdin, so the key travels in the URL: the path of the installed app
  (``/crowdin/<key>/translate``: the manifest's ``baseUrl`` is ``/crowdin/<key>``), or, for
  a caller of its own (a relay, curl), ``POST /crowdin/translate`` with ``?key=`` or
  ``Authorization: Bearer <key>`` (the key in the URL wins: Crowdin's own Bearer is its JWT).
  A missing key is 401, a bad one 401 (429 past the address's bad-key limit), as on ``/v1``.
* **Languages**: each id read as the fleet reads any code (:func:`languages.to_fleet`);
  Crowdin's joke locales (Pirate, upside-down English, LOLCAT) are refused by name.
* **Submission**: the strings are one job on the interactive lane through the drop-in path
  (:func:`mtfleet.api.dropin.translate`: the phrase cache, the key's quota, rate and fair
  share, the retry key that makes a resend join its job), waited for up to
  ``MT_CROWDIN_WAIT_S``. Strings carrying Crowdin's ``notranslate`` spans are read as HTML
  (the spans are kept, :mod:`mtfleet.formats.html`); the others as text.
* **Errors** in Crowdin's shape (:mod:`mtfleet.api.crowdin.errors`): bad input is 422 (the
  ``crowdin`` column of :data:`mtfleet.api.errors.STATUS`), never a 5xx; ``stringsUrl`` is
  refused (the fleet fetches no URL a request names): the manifest's ``batchSize`` keeps the
  strings in the body.
"""

from __future__ import annotations

from mtfleet.api.crowdin.errors import SURFACE
from mtfleet.api.crowdin.routes import router

__all__ = ["SURFACE", "router"]
