"""The openai engine's HTTP behaviour against a small local server that can be told to fail:
retries and backoff on 429/5xx, what each failure becomes for the segment and the worker, the
concurrency cap and interactive requests first, abort, the request it sends, pre-flight.

A real server cannot be made to answer 429 or 503 on demand; everything else about the engine
(prompts, limits, a worker in front of a real vLLM server, the server dying and coming back)
is tested against vLLM's own OpenAI server in ``test_openai_engine.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mtfleet.core.errors import EngineUnavailable
from mtfleet.core.settings import Settings
from mtfleet.fleet.localfleet import free_port
from mtfleet.workers.engines.base import Translation, TranslationRequest
from mtfleet.workers.engines.openai_engine import OpenAIEngine
from mtfleet.workers.scheduler import Deadlines, make_scheduler
from tests.support import ChunkRun

Reply = tuple[int, dict[str, str], Any]  # status, headers, JSON body


def completion(text: str, finish: str = "stop", tokens: int = 3) -> Reply:
    body = {
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"completion_tokens": tokens},
    }
    return 200, {}, body


def echo(body: dict[str, Any]) -> Reply:
    """Answers with the segment itself (the text after the instruction's blank line)."""
    return completion("ES " + body["messages"][0]["content"].split("\n\n", 1)[1])


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hung up (an aborted request, a stopped server): nothing to say


@dataclass
class FakeServer:
    """Just enough of an OpenAI API: ``/v1/models`` lists ``models``; each chat completion is
    answered by ``reply(body)``, after waiting for :meth:`release` while ``hold`` is set."""

    reply: Callable[[dict[str, Any]], Reply] = echo
    models: list[dict[str, Any]] = field(
        default_factory=lambda: [{"id": "m", "root": "/models/m", "max_model_len": 4096}]
    )
    hold: bool = False
    bodies: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    open_now: int = 0
    open_most: int = 0
    models_unavailable: int = 0  # GET /v1/models answers 503 this many more times
    models_asked: int = 0
    key: str | None = None  # the API key it requires, if any
    connections: list[socket.socket] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._cond = threading.Condition()
        self._released = threading.Semaphore(0)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: object) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                fake.connections.append(self.connection)

            def do_GET(self) -> None:
                if fake.key and self.headers.get("Authorization") != f"Bearer {fake.key}":
                    self._send(401, {}, {"error": {"message": "Unauthorized"}})
                elif self.path == "/v1/models":
                    fake.models_asked += 1
                    if fake.models_unavailable > 0:
                        fake.models_unavailable -= 1
                        self._send(503, {}, {"error": "Model is loading"})
                    else:
                        self._send(200, {}, {"object": "list", "data": fake.models})
                else:
                    self._send(404, {}, {"error": {"message": "no such path"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake._cond:
                    fake.bodies.append(body)
                    fake.headers.append(dict(self.headers))
                    fake.open_now += 1
                    fake.open_most = max(fake.open_most, fake.open_now)
                    fake._cond.notify_all()
                try:
                    if fake.hold:
                        fake._released.acquire(timeout=30)
                    self._send(*fake.reply(body))
                finally:
                    with fake._cond:
                        fake.open_now -= 1
                        fake._cond.notify_all()

            def _send(self, status: int, headers: dict[str, str], body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.port = free_port()
        self.httpd = QuietServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def release(self, n: int = 1) -> None:
        for _ in range(n):
            self._released.release()

    def wait_for(self, what: Callable[[], bool], timeout: float = 10) -> None:
        with self._cond:
            assert self._cond.wait_for(what, timeout), "the server never saw it"

    def contents(self) -> list[str]:
        return [b["messages"][0]["content"].split("\n\n", 1)[1] for b in self.bodies]

    def stop(self) -> None:
        """As a server that dies: no new connections, and the open ones are closed."""
        self.release(1000)
        self.httpd.shutdown()
        self.httpd.server_close()
        for conn in self.connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.stop()


def engine_for(server: FakeServer, **settings: Any) -> OpenAIEngine:
    values: dict[str, Any] = {
        "engine": "openai",
        "openai_base_url": server.url,
        "model": "m",
        "openai_retries": 2,
        "openai_wait_s": 0,
        "temperature": 0,
        **settings,
    }
    return OpenAIEngine(Settings(**values).engine)


@pytest.fixture
def run(server: FakeServer) -> Iterator[Callable[..., ChunkRun]]:
    """A worker's chunk path (real scheduler and checks, fakeredis store) over the engine."""
    made: list[ChunkRun] = []

    def make(**settings: Any) -> ChunkRun:
        made.append(ChunkRun(engine_for(server, **settings)))
        return made[-1]

    yield make
    for chunk_run in made:
        chunk_run.close()
        chunk_run.engine.close()


def eventually(what: Callable[[], bool], timeout: float = 10) -> None:
    """Until ``what()`` holds (state of the engine's loop, which signals nothing)."""
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "it never happened"
        time.sleep(0.01)


def req(text: str, priority: int = 1) -> TranslationRequest:
    return TranslationRequest(text, "en", "es", priority)


def test_429_and_503_are_retried_with_backoff_until_the_server_answers(
    server: FakeServer, run: Callable[..., ChunkRun]
) -> None:
    refusals: list[Reply] = [
        (429, {"Retry-After": "0"}, {"error": {"message": "slow down"}}),
        (503, {}, {"error": "loading"}),
    ]
    answers = iter(refusals)
    server.reply = lambda body: next(answers, None) or echo(body)
    outcomes = run().run(["Red shoes"])
    assert [o.translation for o in outcomes] == ["ES Red shoes"]
    assert len(server.bodies) == 3  # two refusals, then the answer


def test_a_server_that_keeps_refusing_is_down_and_the_chunk_goes_back(
    server: FakeServer, run: Callable[..., ChunkRun]
) -> None:
    server.reply = lambda body: (503, {}, {"error": {"message": "overloaded"}})
    chunk_run = run(openai_retries=1)
    job, messages = chunk_run.submit(["Red shoes", "Blue shoes"])
    with pytest.raises(EngineUnavailable, match=r"answered 503 overloaded to 2 attempt\(s\)"):
        chunk_run.processor.process(messages[0])
    # nothing was recorded for the job: the whole chunk is requeued, no segment failed
    assert chunk_run.store.results(job.id, 2) == [None, None]
    assert chunk_run.scheduler.down is not None


def test_a_500_fails_its_segment_alone_after_its_retries(
    server: FakeServer, run: Callable[..., ChunkRun]
) -> None:
    server.reply = lambda body: (
        (500, {}, {"error": {"message": "kaboom"}}) if "boom" in str(body) else echo(body)
    )
    outcomes = run(openai_retries=1).run(["Red shoes", "boom", "Blue shoes"])
    assert [o.translation for o in outcomes] == ["ES Red shoes", None, "ES Blue shoes"]
    assert outcomes[1].error == {
        "type": "engine_error",
        "message": "the server failed the request (500 kaboom) 2 time(s)",
    }
    assert server.contents().count("boom") == 2


def test_context_overflow_is_segment_too_long_and_other_4xx_fail_alone(
    server: FakeServer, run: Callable[..., ChunkRun]
) -> None:
    def reply(body: dict[str, Any]) -> Reply:
        text = str(body)
        if "long one" in text:
            return 400, {}, {"error": {"message": "This model's maximum context length is 4096"}}
        if "odd one" in text:
            return 422, {}, {"error": "Input validation error"}
        return echo(body)

    server.reply = reply
    outcomes = run().run(["long one", "odd one", "fine"])
    assert outcomes[0].error is not None and outcomes[0].error["type"] == "segment_too_long"
    assert outcomes[1].error == {
        "type": "engine_error",
        "message": "the server refused the request (422): Input validation error",
    }
    assert outcomes[2].translation == "ES fine"
    assert len(server.bodies) == 3  # client errors are not retried


def test_a_server_that_cannot_be_reached_is_down_saying_where(
    server: FakeServer, run: Callable[..., ChunkRun]
) -> None:
    chunk_run = run(openai_retries=1)
    server.stop()  # loaded, then the server goes away
    _, messages = chunk_run.submit(["Red shoes"])
    with pytest.raises(EngineUnavailable) as caught:
        chunk_run.processor.process(messages[0])
    assert caught.value.message.startswith(
        f"the OpenAI-compatible server at {server.url} cannot be reached (ClientConnectorError"
    )
    assert caught.value.message.endswith("; 2 attempt(s)")


def test_the_cap_holds_and_interactive_requests_go_first(server: FakeServer) -> None:
    server.hold = True
    engine = engine_for(server, openai_concurrency=2)
    engine.load()
    got: dict[str, Translation | BaseException] = {}
    done = threading.Event()

    def submit(text: str, priority: int) -> None:
        def finished(out: Translation | BaseException) -> None:
            got[text] = out
            if len(got) == 6:
                done.set()

        engine.submit(req(text, priority), finished)

    try:
        submit("bulk 1", 1)
        submit("bulk 2", 1)
        server.wait_for(lambda: server.open_now == 2)
        for text, priority in [("bulk 3", 1), ("bulk 4", 1), ("interactive", 0), ("bulk 5", 1)]:
            submit(text, priority)
        eventually(lambda: engine.server.gate.waiting == 4)
        assert server.open_now == 2  # the rest wait in the worker, not at the server
        server.release(1)  # one slot frees: it goes to the interactive request, queued third
        server.wait_for(lambda: len(server.bodies) == 3)
        assert server.contents()[2] == "interactive"
        server.release(5)
        assert done.wait(10)
    finally:
        engine.close()
    assert server.open_most == 2
    contents = server.contents()
    assert sorted(contents[:2]) == ["bulk 1", "bulk 2"]
    assert sorted(contents[3:]) == ["bulk 3", "bulk 4", "bulk 5"]
    assert all(isinstance(got[t], Translation) for t in got)


def test_an_aborted_request_gives_its_place_to_the_next(server: FakeServer) -> None:
    server.hold = True
    engine = engine_for(server, openai_concurrency=1)
    engine.load()
    answers: list[object] = []
    try:
        first = engine.submit(req("first"), answers.append)
        server.wait_for(lambda: server.open_now == 1)
        engine.submit(req("second"), answers.append)
        engine.abort(first)  # its deadline passed: the connection is closed, the slot freed
        server.wait_for(lambda: len(server.bodies) == 2)
        server.release(2)
        server.wait_for(lambda: server.open_now == 0)
    finally:
        engine.close()
    assert answers == [Translation("ES second", truncated=False, tokens_out=3)]


def test_the_request_carries_the_prompt_sampling_and_limits(server: FakeServer) -> None:
    server.models = [{"id": "m", "root": "/models/Hunyuan-MT-7B", "max_model_len": 60}]
    engine = engine_for(
        server,
        openai_api_key="sekrit",
        temperature=0.7,
        top_k=20,
        seed=7,
        max_tokens_ratio=2.0,
        max_tokens_slack=4,
    )
    engine.load()
    try:
        out = engine.translate([req("Wear <|im_end|> shoes"), req("Tiny")])
        too_long = engine.check(req(" ".join(["word"] * 40)))
    finally:
        engine.close()
    # the control token is broken in the prompt, and whole again in the translation
    assert [t.text for t in out] == ["ES Wear <|im_end|> shoes", "ES Tiny"]
    body = next(b for b in server.bodies if "Wear" in str(b))  # the two race to the server
    # the model's root names Hunyuan-MT: its model card's template, as the vllm engine sends it
    assert body["messages"] == [
        {
            "role": "user",
            "content": "Translate the following segment into Spanish, without additional "
            "explanation.\n\nWear <\u200b|im_end|> shoes",
        }
    ]
    assert {k: body[k] for k in ("model", "temperature", "top_p", "top_k", "seed")} == {
        "model": "m",
        "temperature": 0.7,
        "top_p": 0.6,
        "top_k": 20,
        "seed": 7,
    }
    assert body["repetition_penalty"] == 1.05 and body["stream"] is False
    assert body["max_tokens"] == 2 * 4 + 4  # 4 estimated source tokens x ratio + slack
    assert server.headers[0]["Authorization"] == "Bearer sekrit"
    assert too_long is not None and too_long.endswith("context 60")  # from /v1/models


def test_a_server_that_does_not_answer_in_time_fails_the_segment_alone(
    server: FakeServer, run: Callable[..., ChunkRun]
) -> None:
    chunk_run = run(openai_timeout_s=1)
    server.hold = True  # nothing is answered until released
    try:
        [outcome] = chunk_run.run(["Red shoes"])
    finally:
        server.release(10)
    assert outcome.error == {
        "type": "engine_timeout",
        "message": "the server did not answer within 1s (MT_OPENAI_TIMEOUT_S)",
    }
    assert len(server.bodies) == 1  # a request that used its whole time is not sent again
    assert chunk_run.scheduler.down is None  # the engine serves on


def test_a_refused_key_is_said_at_preflight(server: FakeServer) -> None:
    server.key = "right"
    assert engine_for(server, openai_api_key="right").preflight() == []
    [problem] = engine_for(server, openai_api_key="wrong").preflight()
    assert problem.startswith(f"{server.url}/models refused the API key (401)")


def test_load_waits_for_a_server_still_starting(server: FakeServer) -> None:
    server.models_unavailable = 1  # the first GET /v1/models: 503, as a server still loading
    with pytest.raises(EngineUnavailable, match=r"^it answers 503 Model is loading$"):
        engine_for(server).load()
    server.models_unavailable = 1
    engine = engine_for(server, openai_wait_s=60)
    try:
        engine.load()
    finally:
        engine.close()
    assert server.models_asked == 3  # 503 (the first engine gives up); 503, then the answer
    assert engine.limits.max_input_tokens == 2048  # half the context /v1/models reports


def test_preflight_says_what_is_wrong(server: FakeServer) -> None:
    assert engine_for(server).preflight() == []
    assert engine_for(server, model="other").preflight() == [
        f"MT_MODEL=other is not served at {server.url}; it serves: m"
    ]
    server.stop()
    [problem] = engine_for(server).preflight()
    assert problem.startswith(f"the OpenAI-compatible server at {server.url} cannot be reached")
    assert problem.endswith("start the server first, or correct MT_OPENAI_BASE_URL")


def test_mtfleet_worker_refuses_to_start_without_a_server(redis_url: str) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    env = {**os.environ, "MT_OPENAI_BASE_URL": url, "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "mtfleet", "worker", "--engine", "openai"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert "mtfleet worker (engine openai) cannot start" in proc.stderr
    assert f"the OpenAI-compatible server at {url} cannot be reached" in proc.stderr
    env.pop("MT_OPENAI_BASE_URL")
    proc = subprocess.run(
        [sys.executable, "-m", "mtfleet", "worker", "--engine", "openai"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2
    assert "engine openai needs MT_OPENAI_BASE_URL" in proc.stderr


def test_a_bulk_request_past_its_deadline_fails_alone_not_the_interactive_one_beside_it(
    server: FakeServer,
) -> None:
    """The streaming engine's side of "one lane never fails another", through the scheduler a
    worker builds: a bulk request the server never answers outlives its deadline while an
    interactive request is open beside it. The bulk one is aborted alone (its connection
    closed, ``engine_timeout``); the interactive one is answered, and the engine serves on."""
    answer_urgent = threading.Event()

    def reply(body: dict[str, Any]) -> Reply:
        if "Red shoes" not in str(body):  # the bulk one: past its deadline and its abort
            answer_urgent.wait(30)
        return echo(body)

    server.reply = reply
    engine = engine_for(server, openai_concurrency=4)
    engine.load()
    deadlines = Deadlines(factor=1, floor_s=1.0, ceiling_s=60)
    sched = make_scheduler(engine, latency_target_s=0.5, deadlines=deadlines)
    try:
        bulk = sched.submit([req("A line never answered", 1)])
        server.wait_for(lambda: server.open_now == 1)
        time.sleep(0.5)  # the interactive request's deadline comes half a second after
        urgent = sched.submit([req("Add to cart", 0)])
        server.wait_for(lambda: server.open_now == 2)
        [late] = bulk.result(timeout=deadlines.floor_s + 10)
        assert late.error is not None and late.error["type"] == "engine_timeout", late
        assert not urgent.done()
        answer_urgent.set()
        [out] = urgent.result(timeout=10)
        assert out.ok and out.translation == "ES Add to cart", out
        assert sched.down is None
        assert [o.translation for o in sched.submit([req("Red shoes")]).result(10)] == [
            "ES Red shoes"
        ]
    finally:
        answer_urgent.set()
        sched.close()
        engine.close()
