"""Translation memories: importing 100,000 TMX pairs, and looking segments up in them.

In process, against a private redis-server (what the API and a worker do, without HTTP):

1. a TMX 1.4 file of ``pairs`` units as a CAT tool writes it (regional language codes, a third
   language in every unit, inline codes on one unit in ten) is imported through
   :meth:`TranslationMemoryStore.import_file` (parse, check, store): pairs per second;
2. the first lookup builds the process's index of the memory (its seconds and memory);
3. ``lookups`` segments are looked up at the default threshold (75), ``k`` = 5, floor 50:
   a quarter are stored sources (with other spacing), almost half stored sources with one to
   four words changed, the rest new sentences. Each lookup is timed on the wall clock and in
   CPU time of its thread; the target is p95 <= 2 ms per segment;
4. one correction (``add_entries``) and the time until the next lookup of the new version
   serves it.

The sentences mix the 200 everyday words of :mod:`bench.workload` with a Zipf-distributed
lexicon of 20,000 made-up words (names, terms), as real memories mix function words and a long
tail of content words: the token index's work depends on that mix.
"""

from __future__ import annotations

import os
import random
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import accumulate
from pathlib import Path

import redis

from bench.report import Check, Outcome
from bench.run_context import Context
from bench.workload import WORDS
from mtfleet.core.tm import TMLimits, TranslationMemoryStore, forget_indexes
from mtfleet.fleet.localfleet import free_port, redis_server_command

TARGET_P95_MS = 2.0
_SYLLABLES = ("ka", "ri", "mon", "tel", "sa", "vo", "lin", "dra", "pe", "ux", "qua", "zen", "bo",
              "ti", "fer", "nal", "ow", "ste", "gri", "ha")  # fmt: skip


@contextmanager
def private_redis() -> Iterator[redis.Redis]:
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="mt-bench-tm-")
    proc = subprocess.Popen(
        redis_server_command(port, Path(workdir), appendonly=False),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port, decode_responses=True)
    try:
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        yield client
    finally:
        client.close()
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


class Text:
    """Seeded sentences (see the module's docstring) and their made-up translations."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        lexicon: set[str] = set()
        while len(lexicon) < 20_000:
            word = "".join(self.rng.choices(_SYLLABLES, k=self.rng.randint(2, 4)))
            lexicon.add(word)
        self.lexicon = sorted(lexicon)
        self.rng.shuffle(self.lexicon)
        self.cum = list(accumulate(1 / (i + 1) for i in range(len(self.lexicon))))

    def word(self) -> str:
        if self.rng.random() < 0.5:
            return self.rng.choice(WORDS)
        return self.rng.choices(self.lexicon, cum_weights=self.cum)[0]

    def sentence(self) -> str:
        words = [self.word() for _ in range(self.rng.randint(4, 24))]
        if self.rng.random() < 0.2:
            words.insert(self.rng.randrange(len(words)), str(self.rng.randint(2, 999)))
        words[0] = words[0].capitalize()
        return " ".join(words) + self.rng.choice(".....!?:")

    def changed(self, source: str) -> str:
        """A stored source with one to four words substituted, dropped, added or recased."""
        words = source.split()
        for _ in range(self.rng.randint(1, 4)):
            i = self.rng.randrange(len(words))
            op = self.rng.random()
            if op < 0.5:
                words[i] = self.word()
            elif op < 0.7 and len(words) > 2:
                del words[i]
            elif op < 0.9:
                words.insert(i, self.word())
            else:
                words[i] = words[i].swapcase()
        return " ".join(words)


def translated(sentence: str) -> str:
    return " ".join(w[::-1] for w in sentence.split())


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _coded(text: Text, sentence: str) -> tuple[str, str]:
    """The source and target ``<seg>`` contents, one unit in ten with a bold run (bpt/ept)."""
    if text.rng.random() >= 0.1:
        return _esc(sentence), _esc(translated(sentence))
    words = sentence.split()
    i = text.rng.randrange(len(words))
    bold = '<bpt i="1">&lt;b&gt;</bpt>{}<ept i="1">&lt;/b&gt;</ept>'
    src = [*words[:i], bold.format(_esc(words[i])), *words[i + 1 :]]
    tgt = [w[::-1] for w in words]
    tgt[i] = bold.format(_esc(tgt[i]))
    return " ".join(_esc(w) if "<" not in w else w for w in src), " ".join(tgt)


def tmx_file(text: Text, pairs: int) -> tuple[bytes, list[str]]:
    """A TMX 1.4 file of ``pairs`` distinct units (en-US, es-ES and fr-FR variants), and the
    sources as stored (inline codes as the fleet's tags)."""
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4">\n<header '
        'creationtool="bench" creationtoolversion="1" segtype="sentence" o-tmf="bench" '
        'adminlang="en-US" srclang="en-US" datatype="plaintext"/>\n<body>\n'
    ]
    seen: set[str] = set()
    stored: list[str] = []
    while len(stored) < pairs:
        sentence = text.sentence()
        if sentence in seen:
            continue
        seen.add(sentence)
        src, tgt = _coded(text, sentence)
        out.append(
            f'<tu tuid="{len(stored)}" creationdate="20250101T000000Z">'
            f'<tuv xml:lang="en-US"><seg>{src}</seg></tuv>'
            f'<tuv xml:lang="fr-FR"><seg>{_esc(sentence.upper())}</seg></tuv>'
            f'<tuv xml:lang="es-ES"><seg>{tgt}</seg></tuv></tu>\n'
        )
        stored.append(sentence if "<bpt" not in src else _stored_source(src))
    out.append("</body>\n</tmx>\n")
    return "".join(out).encode(), stored


def _stored_source(seg: str) -> str:
    return (
        seg.replace('<bpt i="1">&lt;b&gt;</bpt>', "<g1>")
        .replace('<ept i="1">&lt;/b&gt;</ept>', "</g1>")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
    )


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def tm_scenario(ctx: Context) -> Outcome:
    pairs = ctx.n(100_000, 20_000)
    lookups = ctx.n(5_000, 1_000)
    text = Text(ctx.seed)
    ctx.log(f"tm: a TMX of {pairs:,} units")
    tmx, sources = tmx_file(text, pairs)
    limits = TMLimits(max_pairs=max(pairs, TMLimits().max_pairs), max_import_bytes=len(tmx) + 1)
    with private_redis() as r:
        store = TranslationMemoryStore(r, limits)
        t0 = time.perf_counter()
        info = store.import_file("bench", "bench", "en", "es", tmx, "bench.tmx")
        import_s = time.perf_counter() - t0
        stored_mb = int(r.hget(f"mt:tm:{info.id}", "bytes") or 0) / 2**20
        ctx.log(f"tm: imported {info.entry_count:,} pairs in {import_s:.1f}s; indexing")

        forget_indexes()
        rss0 = _rss_mb()
        t0 = time.perf_counter()
        index = store.index(info.id, info.version)
        build_s = time.perf_counter() - t0
        index_mb = _rss_mb() - rss0

        queries = []
        for _ in range(lookups):
            kind = text.rng.random()
            if kind < 0.25:
                queries.append("  " + text.rng.choice(sources).replace(" ", "  ", 1))
            elif kind < 0.7:
                queries.append(text.changed(text.rng.choice(sources)))
            else:
                queries.append(text.sentence())
        for q in queries[:50]:  # warm the allocator and rapidfuzz's caches
            index.lookup(q)
        wall: list[float] = []
        cpu: list[float] = []
        matches = examples = 0
        ctx.log(f"tm: {lookups:,} lookups")
        for q in queries:
            c0, w0 = time.thread_time(), time.perf_counter()
            found = index.lookup(q, threshold=75, k=5, floor=50)
            w1, c1 = time.perf_counter(), time.thread_time()
            wall.append((w1 - w0) * 1000)
            cpu.append((c1 - c0) * 1000)
            matches += found.match is not None
            examples += len(found.examples)

        t0 = time.perf_counter()
        fixed = store.add_entries(info.id, "bench", [(sources[0], "corrected")])
        current = store.for_job(info.id, owner="bench", source="en", target="es")
        served = store.index(info.id, current.version).lookup(sources[0]).match
        correction_ms = (time.perf_counter() - t0) * 1000
        assert served is not None and served.target == "corrected", served
        assert fixed.version == current.version

    p95 = _pct(wall, 95)
    return Outcome(
        figures={
            "TMX import pairs/s": info.entry_count / import_s,
            "TMX size MB": len(tmx) / 2**20,
            "index build s": build_s,
            "lookup p50 ms": statistics.median(wall),
            "lookup p95 ms": p95,
            "lookup p95 ms (CPU)": _pct(cpu, 95),
            "lookup p99 ms": _pct(wall, 99),
            "matches >= 75": f"{matches / lookups:.0%}",
            "correction seen ms": correction_ms,
        },
        checks=[Check("TM lookup p95 at 100k pairs", p95, "<=", TARGET_P95_MS, " ms")],
        raw={
            "pairs": info.entry_count,
            "skipped": info.skipped,
            "lookups": lookups,
            "import_s": import_s,
            "tmx_bytes": len(tmx),
            "stored_mb": stored_mb,
            "index_build_s": build_s,
            "index_rss_mb": index_mb,
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "lookup_wall_ms": {p: _pct(wall, p) for p in (50, 90, 95, 99, 100)},
            "lookup_cpu_ms": {p: _pct(cpu, p) for p in (50, 90, 95, 99, 100)},
            "match_rate": matches / lookups,
            "examples_per_lookup": examples / lookups,
            "correction_seen_ms": correction_ms,
        },
        notes=[
            "in process against a private redis-server; the index is the one a worker "
            "builds once per memory version",
            f"{pairs:,} pairs" + (" (--quick: the target is for 100,000)" if ctx.quick else ""),
        ],
    )
