"""The vLLM engine called directly, in a process of its own: the fleet's yardstick.

Reads one line ``{"texts": [...], "naive": K, "source": "en", "target": "es"}`` on stdin,
loads the engine from the ``MT_*`` environment exactly as a worker does (``create_engine``),
warms it up and prints ``VLLM_READY``; then waits for a line ``go`` on stdin (so it can load
while a fleet loads, and measure once the fleet is gone), and times

1. all texts in one ``translate`` call: the engine with its best batching;
2. K of the texts (every n-th) one ``translate`` call each, one after the other: the naive way seed
   write-ups serve requests (a synchronous generate per request).

Prints one line ``VLLM_DIRECT {json}``.

vLLM spawns processes, hence the ``__main__`` guard: run it as ``python -m bench.vllm_direct``.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    from mtfleet.core.settings import Settings
    from mtfleet.workers.engines import TranslationRequest, create_engine

    job = json.loads(sys.stdin.readline())
    source, target = job.get("source", "en"), job.get("target", "es")
    texts: list[str] = job["texts"]
    engine = create_engine(Settings())
    t0 = time.monotonic()
    engine.load()
    load_s = time.monotonic() - t0

    def reqs(batch: list[str]) -> list[TranslationRequest]:
        return [TranslationRequest(t, source, target, 1) for t in batch]

    engine.translate(reqs([f"Warm up {i}." for i in range(8)]))
    print("VLLM_READY", flush=True)
    if sys.stdin.readline().strip() != "go":
        engine.close()
        return

    t0 = time.monotonic()
    out = engine.translate(reqs(texts))
    batch_s = time.monotonic() - t0
    if len(out) != len(texts):
        raise SystemExit(f"engine returned {len(out)} outputs for {len(texts)} inputs")

    k = int(job.get("naive", 0))
    naive = texts[:: max(1, len(texts) // k)][:k] if k else []  # spread over the mix of lengths
    t0 = time.monotonic()
    for text in naive:
        engine.translate(reqs([text]))
    naive_s = time.monotonic() - t0

    result = {
        "load_s": round(load_s, 2),
        "batch_segments": len(texts),
        "batch_s": batch_s,
        "batch_rps": len(texts) / batch_s,
        "naive_segments": len(naive),
        "naive_s": naive_s,
        "naive_rps": len(naive) / naive_s if naive else None,
        "limits": list(engine.limits.__dict__.values()),
    }
    print("VLLM_DIRECT " + json.dumps(result), flush=True)
    engine.close()


if __name__ == "__main__":
    main()
