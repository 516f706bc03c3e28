"""Apertium: rule-based translation on the CPU, offline, no weights (Debian packages).

Each language pair runs as one persistent pipeline in *null-flush* mode (every program of the
mode gets ``-z``): we write segments separated by NUL bytes and read one NUL-terminated answer
per segment, so a batch costs one write and one read, segments never bleed into each other,
and no process starts per call. Text is put into Apertium's stream format ourselves, as
``apertium-destxt`` puts it (the characters the format reserves escaped; ``~``, the
post-generator's mark, and newlines in superblanks, which no program of a mode touches) and
read back the same way.

Each pair has two pipelines, one per lane (``parallel_lanes``): an interactive call never waits
behind a bulk call, and the bulk pipeline runs at the lowest CPU priority (``SCHED_IDLE``,
``workers.priority``), so a saturating bulk backlog leaves the CPU to interactive calls and to
everything else in the worker's CPU group (the worker; on one host the API and Redis too) the
moment they want it; its own throughput drops by what they take (``MT_BULK_PRIORITY=normal``
leaves it at the worker's own priority).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shlex
import shutil
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from mtfleet.core import languages
from mtfleet.core.errors import EngineError
from mtfleet.core.settings import EngineSettings
from mtfleet.formats.base import TAG
from mtfleet.workers import priority
from mtfleet.workers.engines.base import Engine, EngineLimits, TranslationRequest

log = logging.getLogger(__name__)

MODE_DIRS = (Path("/usr/share/apertium/modes"), Path("/usr/local/share/apertium/modes"))
_MODE_NAME = re.compile(r"^([a-z]{2,3})-([a-z]{2,3})$")
_RESERVED = set("\\[]^$/@<>{}")  # escaped with a backslash
#: Kept in a superblank of their own: ``~`` marks a word for the post-generator (``lt-proc -p``),
#: which drops it; a newline ends a stream line.
_BLANKED = set("~\n")
# Appended to every segment so the last word is flushed through transfer (as apertium-destxt
# does); removed from the output.
_TAIL = ".[]"


def escape(text: str) -> str:
    """Text -> stream format. Inline tags (``<x1/>``, ``<g1>``, ``</g1>``: document markup and
    protected spans, see formats/base.py) become superblanks, which every Apertium
    program passes through untouched."""
    out = []
    pos = 0
    for m in TAG.finditer(text):
        out.append(_escape_text(text[pos : m.start()]))
        out.append(f"[{m.group(0)}]")
        pos = m.end()
    out.append(_escape_text(text[pos:]))
    return "".join(out) + _TAIL


def _escape_text(text: str) -> str:
    out = []
    for ch in text:
        if ch in _RESERVED:
            out.append("\\" + ch)
        elif ch in _BLANKED:
            out.append(f"[{ch}]")
        elif ch == "\0":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def unescape(stream: str) -> str:
    """Stream format -> text: superblank brackets dropped, backslash escapes resolved."""
    if stream.endswith(_TAIL):
        stream = stream[: -len(_TAIL)]
    elif stream.rstrip().endswith("[]"):
        stream = stream.rstrip()[:-2].removesuffix(".")
    out = []
    i = 0
    while i < len(stream):
        ch = stream[i]
        if ch == "\\" and i + 1 < len(stream):
            out.append(stream[i + 1])
            i += 2
            continue
        if ch not in "[]":
            out.append(ch)
        i += 1
    return "".join(out)


NO_PAIR = "no Apertium language pair is installed (e.g. apt-get install apertium-eng-spa)"


def discover_modes(dirs: Sequence[Path] = MODE_DIRS) -> dict[tuple[str, str], Path]:
    """Installed modes that translate between two languages we know: (src, tgt) -> mode file."""
    found: dict[tuple[str, str], Path] = {}
    for d in dirs:
        if not d.is_dir():
            continue
        for mode in sorted(d.glob("*.mode")):
            m = _MODE_NAME.match(mode.stem)
            if not m:
                continue
            src, tgt = (languages.from_iso3(c) if len(c) == 3 else c for c in m.groups())
            if src in languages.LANGUAGES and tgt in languages.LANGUAGES:
                found.setdefault((src, tgt), mode)
    return found


def null_flush_command(mode_file: Path) -> str:
    """The mode's pipeline with ``-z`` on every program and unknown words left unmarked."""
    stages = []
    for stage in mode_file.read_text().strip().split("|"):
        words = shlex.split(stage.replace("$1", "-n").replace("$2", ""))
        if not words:
            continue
        stages.append(shlex.join([words[0], "-z", *words[1:]]))
    return " | ".join(stages)


class _Call:
    """One :meth:`ApertiumEngine.translate` call: the pipeline it runs on now, and whether it
    was interrupted. A call has no time limit of its own: the scheduler's deadline ends it
    through :meth:`ApertiumEngine.interrupt`, which kills the pipeline this call runs on (the
    call then raises, and the pipeline's next call starts a fresh one) and no other: a call of
    the other lane runs on its own pipeline, and the next call on this one is another call."""

    __slots__ = ("_lock", "_pipe", "interrupted", "requests")

    def __init__(self, requests: Sequence[TranslationRequest]) -> None:
        self.requests = requests
        self.interrupted = False
        self._pipe: _Pipeline | None = None
        self._lock = threading.Lock()

    def enter(self, pipe: _Pipeline) -> None:
        """The call runs on ``pipe`` from now; raises once interrupted."""
        with self._lock:
            if self.interrupted:
                raise EngineError("the apertium call was interrupted (it outlived its deadline)")
            self._pipe = pipe

    def leave(self) -> None:
        with self._lock:
            self._pipe = None

    def interrupt(self) -> None:
        with self._lock:
            self.interrupted = True
            if self._pipe is not None:
                self._pipe.close()


class _Pipeline:
    """One long-lived null-flush pipeline for one mode, one call at a time."""

    def __init__(self, command: str, bulk: bool = False) -> None:
        self.command = command
        self.bulk = bulk
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            argv = ["bash", "-o", "pipefail", "-c", self.command]
            self.proc = subprocess.Popen(
                priority.shell_command(self.command) if self.bulk else argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                process_group=0,  # killed whole; in the worker's session (its CPU group)
            )
        return self.proc

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.wait()

    def run(self, texts: Sequence[str], call: _Call) -> list[str]:
        with self.lock:
            call.enter(self)
            try:
                return self._run(texts)
            finally:
                call.leave()

    def _run(self, texts: Sequence[str]) -> list[str]:
        proc = self._ensure()
        assert proc.stdin is not None and proc.stdout is not None
        payload = b"".join(escape(t).encode("utf-8") + b"\0" for t in texts)
        writer = threading.Thread(target=self._write, args=(proc, payload), daemon=True)
        writer.start()
        buf = bytearray()
        fd = proc.stdout.fileno()
        answers = 0
        while answers < len(texts):
            data = os.read(fd, 1 << 16)
            if not data:
                self.close()
                raise EngineError("apertium pipeline exited (killed, or it crashed)")
            answers += data.count(b"\0")
            buf += data
        writer.join()
        parts = bytes(buf).split(b"\0")
        if any(parts[len(texts) :]):
            # Out of step with our segments: nothing from this call can be trusted.
            self.close()
            raise EngineError("apertium returned more segments than it was given")
        return [unescape(p.decode("utf-8", errors="replace")) for p in parts[: len(texts)]]

    @staticmethod
    def _write(proc: subprocess.Popen[bytes], payload: bytes) -> None:
        try:
            assert proc.stdin is not None
            proc.stdin.write(payload)
            proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass


class ApertiumEngine(Engine):
    name = "apertium"
    parallel_lanes = True
    lane_processes = True

    def __init__(self, settings: EngineSettings, mode_dirs: Sequence[Path] = MODE_DIRS) -> None:
        self.settings = settings
        self.mode_dirs = mode_dirs
        self._modes: dict[tuple[str, str], Path] = {}
        # (source, target, interactive?) -> its pipeline, started at its first call
        self._pipes: dict[tuple[str, str, bool], _Pipeline] = {}
        self._calls: list[_Call] = []  # in progress
        self._calls_lock = threading.Lock()
        self._fingerprint = ""

    def preflight(self) -> list[str]:
        problems = []
        for program in ("bash", "lt-proc", "apertium-transfer"):
            if shutil.which(program) is None:
                problems.append(f"{program} is not installed (apt-get install apertium)")
        if not discover_modes(self.mode_dirs):
            problems.append(NO_PAIR)
        return problems

    def load(self) -> None:
        self._modes = discover_modes(self.mode_dirs)
        if not self._modes:
            raise EngineError(NO_PAIR)
        digest = hashlib.sha256()
        for pair, mode in sorted(self._modes.items()):
            digest.update(f"{pair}:{mode.read_text()}".encode())
            for path in sorted(set(re.findall(r"'(/[^']+)'", mode.read_text()))):
                st = Path(path).stat()
                digest.update(f"{path}:{st.st_size}:{int(st.st_mtime)}".encode())
        self._fingerprint = "apertium-" + digest.hexdigest()[:16]
        for (src, tgt), mode in self._modes.items():
            command = null_flush_command(mode)
            self._pipes[(src, tgt, True)] = _Pipeline(command)
            self._pipes[(src, tgt, False)] = _Pipeline(
                command, bulk=self.settings.bulk_priority == "lowest"
            )

    @property
    def model(self) -> str:
        return "apertium"

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def limits(self) -> EngineLimits:
        return EngineLimits(max_sequences=512, max_batch_tokens=200_000, max_input_tokens=20_000)

    def pairs(self) -> list[tuple[str, str]]:
        # before load (mtfleet worker's pre-flight checks MT_PAIRS): the installed modes
        return sorted(self._modes or discover_modes(self.mode_dirs))

    def translate(self, requests: Sequence[TranslationRequest]) -> list[str]:
        out: list[str | None] = [None] * len(requests)
        by_pair: dict[tuple[str, str], list[int]] = {}
        for i, req in enumerate(requests):
            by_pair.setdefault((req.source, req.target), []).append(i)
        # a call of interactive requests only goes to the interactive pipelines
        interactive = all(r.priority <= 0 for r in requests)
        call = _Call(requests)
        with self._calls_lock:
            self._calls.append(call)
        try:
            for pair, idxs in by_pair.items():
                pipe = self._pipes.get((*pair, interactive))
                if pipe is None:
                    raise EngineError(f"apertium has no mode for {pair[0]}->{pair[1]}")
                texts = pipe.run([requests[i].text for i in idxs], call)
                for i, text in zip(idxs, texts, strict=True):
                    out[i] = text
        finally:
            with self._calls_lock:
                self._calls.remove(call)
        return [t if t is not None else "" for t in out]

    def interrupt(self, call: Sequence[TranslationRequest]) -> None:
        """End the call that was given ``call``, if it still runs: the pipeline it runs on is
        killed (so it raises) and it starts on no other."""
        with self._calls_lock:
            running = [c for c in self._calls if c.requests is call]
        for c in running:
            c.interrupt()

    def close(self) -> None:
        for pipe in self._pipes.values():
            pipe.close()
