"""Architecture rules that keep the API image small: it never imports workers, torch or vLLM."""

from __future__ import annotations

import json
import subprocess
import sys


def test_api_process_never_imports_workers_or_engines() -> None:
    code = (
        "import sys, json\n"
        "from mtfleet.api.app import create_app\n"
        "create_app()\n"
        "import mtfleet.__main__\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('mtfleet.workers') "
        "or m.split('.')[0] in {'torch', 'vllm', 'transformers'})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


def test_worker_task_module_does_not_load_an_engine_at_import() -> None:
    """``celery -A mtfleet.workers.celery_app`` imports the runtime, the schedulers and the
    engine contract (``engines.base``, plain Python); an engine itself (Apertium's, vLLM's,
    and with it torch) is imported only when the worker boots and creates it."""
    code = (
        "import sys, json\n"
        "import mtfleet.workers.celery_app\n"
        "import mtfleet.workers.runtime, mtfleet.workers.chunk, mtfleet.workers.scheduler\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'torch', 'vllm', 'transformers'} or m.startswith('mtfleet.workers.engines.'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    # the contract only: no engine module, no torch/vLLM/transformers
    assert json.loads(out.stdout) == ["mtfleet.workers.engines.base"]
