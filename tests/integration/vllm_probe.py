"""Load the vLLM engine from MT_* settings in a fresh process and translate stdin's texts.

vLLM starts engine processes with spawn, so it runs here behind a ``__main__`` guard rather
than inside pytest. Prints one JSON object: limits, fingerprint, load time and one outcome per
text (through ``translate_isolated``, exactly as a worker calls the engine).
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    from mtfleet.core.settings import Settings
    from mtfleet.workers.engines import TranslationRequest, create_engine
    from mtfleet.workers.translation import translate_isolated

    job = json.load(sys.stdin)
    engine = create_engine(Settings())
    t0 = time.monotonic()
    engine.load()
    load_s = time.monotonic() - t0
    reqs = [TranslationRequest(t, job["source"], job["target"]) for t in job["texts"]]
    t0 = time.monotonic()
    outcomes = translate_isolated(engine, reqs)
    gen_s = time.monotonic() - t0
    limits = engine.limits
    print(
        "PROBE_RESULT "
        + json.dumps(
            {
                "load_s": load_s,
                "generate_s": gen_s,
                "fingerprint": engine.fingerprint,
                "limits": [limits.max_sequences, limits.max_batch_tokens, limits.max_input_tokens],
                "n_pairs": len(engine.pairs()),
                "outcomes": [o.model_dump(exclude_none=True) for o in outcomes],
            }
        ),
        flush=True,
    )
    engine.close()


if __name__ == "__main__":
    main()
