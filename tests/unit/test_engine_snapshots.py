"""A Hugging Face model id is fingerprinted by the commit of the snapshot the engine loads
(workers/engines/hf_model.py), read from the local cache without the network: new weights on
the Hub, or two hosts holding different snapshots, never share phrase-cache translations.

Each fingerprint is the engine's own (``create_engine(...).fingerprint``, what the worker
registers), taken in a fresh process whose ``HF_HUB_CACHE`` is a cache laid out here as
huggingface_hub lays it out, with ``HF_HUB_OFFLINE=1``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import tiny_model_path

MODEL = "org/tiny-mt"
COMMIT_A = "a" * 40
COMMIT_B = "b" * 40

FINGERPRINT = (
    "import sys\n"
    "from mtfleet.core.settings import Settings\n"
    "from mtfleet.workers.engines import create_engine\n"
    "print(create_engine(Settings(engine='vllm', model=sys.argv[1], vllm_args=sys.argv[2]))"
    ".fingerprint)\n"
)
#: The transformers engine fingerprints once loaded: what it loaded, and whether it translates.
LOADED = (
    "import sys\n"
    "from mtfleet.core.settings import Settings\n"
    "from mtfleet.workers.engines import create_engine\n"
    "from mtfleet.workers.engines.base import TranslationRequest\n"
    "engine = create_engine(Settings(engine='transformers', model=sys.argv[1], temperature=0,"
    " max_tokens_ratio=0.5, max_tokens_slack=4))\n"
    "engine.load()\n"
    "[out] = engine.translate([TranslationRequest('Red running shoes', 'en', 'fr')])\n"
    "print(engine.fingerprint if out.text else 'no output')\n"
)


def hub_cache(root: Path, refs: dict[str, str]) -> Path:
    """A Hugging Face cache holding :data:`MODEL` at both commits (each snapshot's files
    linked to the tiny model's, as huggingface_hub links them to its blobs), its refs
    (``main``, tags) naming the commit each points at."""
    repo = root / "models--org--tiny-mt"
    for commit in (COMMIT_A, COMMIT_B):
        snapshot = repo / "snapshots" / commit
        snapshot.mkdir(parents=True)
        for f in Path(tiny_model_path()).iterdir():
            (snapshot / f.name).symlink_to(f.resolve())
    (repo / "refs").mkdir()
    for ref, commit in refs.items():
        (repo / "refs" / ref).write_text(commit)
    return root


def run(cache: Path, code: str, *args: str) -> str:
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", code, MODEL, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def fingerprint(cache: Path, vllm_args: dict[str, str] | None = None) -> str:
    """The vLLM engine's fingerprint (taken when it is made, before anything loads)."""
    return run(cache, FINGERPRINT, json.dumps(vllm_args or {}))


def test_two_snapshots_have_two_fingerprints_and_one_snapshot_one(tmp_path: Path) -> None:
    host = hub_cache(tmp_path / "host1", {"main": COMMIT_A})
    at_a = fingerprint(host)
    # the same commit on another host (its own cache): the pool's workers share one
    assert fingerprint(hub_cache(tmp_path / "host2", {"main": COMMIT_A})) == at_a
    (host / "models--org--tiny-mt" / "refs" / "main").write_text(COMMIT_B)  # new weights
    at_b = fingerprint(host)
    assert at_b != at_a
    assert fingerprint(hub_cache(tmp_path / "host3", {"main": COMMIT_B})) == at_b
    # a host without the snapshot has neither commit's fingerprint
    (tmp_path / "empty").mkdir()
    assert fingerprint(tmp_path / "empty") not in {at_a, at_b}


def test_the_revision_vllm_loads_is_the_one_fingerprinted(tmp_path: Path) -> None:
    pinned = {"revision": "v2"}
    to_a = fingerprint(hub_cache(tmp_path / "one", {"main": COMMIT_B, "v2": COMMIT_A}), pinned)
    to_b = fingerprint(hub_cache(tmp_path / "two", {"main": COMMIT_A, "v2": COMMIT_B}), pinned)
    assert to_a != to_b


@pytest.mark.slow
def test_a_transformers_engine_fingerprints_the_snapshot_it_loaded(tmp_path: Path) -> None:
    at_a = run(hub_cache(tmp_path / "one", {"main": COMMIT_A}), LOADED)
    at_b = run(hub_cache(tmp_path / "two", {"main": COMMIT_B}), LOADED)
    assert at_a.startswith("transformers-") and at_b.startswith("transformers-")
    assert at_a != at_b
