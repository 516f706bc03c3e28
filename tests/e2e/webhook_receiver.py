"""A webhook receiver for tests: a real HTTP server in the test process, on a free port.

Each path answers from its own script (a list of statuses, with optional headers, used one per
request; 200 once it runs out) and records every request: headers, raw body, when, and whether
``standardwebhooks.Webhook(secret).verify`` accepted it, as a receiver would check it. A stalled
path (:meth:`Receiver.stall`) holds its requests unanswered until it is released.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook

from mtfleet.fleet.localfleet import free_port


@dataclass(frozen=True)
class Attempt:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float
    verified: str  # "ok", or why verification failed
    answered: int

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]


@dataclass
class Receiver:
    secrets: list[str]
    scripts: dict[str, list[tuple[int, dict[str, str]]]] = field(default_factory=dict)
    attempts: dict[str, list[Attempt]] = field(default_factory=lambda: defaultdict(list))
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._lock = threading.Condition()
        self._stalled: dict[str, threading.Event] = {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver._answer(self, body)

            def log_message(self, *_: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def script(self, path: str, *answers: int | tuple[int, dict[str, str]]) -> str:
        """Answer ``path``'s next requests with these statuses (then 200); its URL."""
        self.scripts[path] = [a if isinstance(a, tuple) else (a, {}) for a in answers]
        return self.url(path)

    def stall(self, path: str) -> str:
        """Hold ``path``'s requests unanswered (each recorded when it arrives, with the status
        it answers once released) until :meth:`release`, at most a minute; its URL."""
        self._stalled[path] = threading.Event()
        return self.url(path)

    def release(self, path: str) -> None:
        """Answer ``path``'s held requests, and its next ones at once."""
        self._stalled.pop(path).set()

    def _verify(self, body: bytes, headers: dict[str, str]) -> str:
        problems = []
        for secret in self.secrets:
            try:
                Webhook(secret).verify(body, headers)
                return "ok"
            except Exception as exc:  # noqa: BLE001 - the library's errors, recorded
                problems.append(f"{type(exc).__name__}: {exc}")
        return "; ".join(problems) or "no secret"

    def _answer(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        path = handler.path.lstrip("/")
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            queue = self.scripts.get(path, [])
            status, extra = queue.pop(0) if queue else (200, {})
            verified = self._verify(body, headers)
            self.attempts[path].append(Attempt(path, headers, body, time.time(), verified, status))
            self._lock.notify_all()
            held = self._stalled.get(path)
        if held is not None:
            held.wait(60)
        with contextlib.suppress(OSError):  # (a held request's sender may have given up)
            handler.send_response(status)
            for name, value in extra.items():
                handler.send_header(name, value)
            handler.send_header("Content-Length", "0")
            handler.end_headers()

    def wait_for(self, ok: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        with self._lock:
            while not ok():
                left = deadline - time.monotonic()
                assert left > 0, f"{what}: {dict(self.attempts)}"
                self._lock.wait(left)

    def delivered(self, path: str) -> list[Attempt]:
        return [a for a in self.attempts[path] if 200 <= a.answered < 300]

    def close(self) -> None:
        for path in list(self._stalled):
            self.release(path)
        self._server.shutdown()
        self._server.server_close()
