"""The CLI fails cleanly (exit 1, one line naming the URL tried, no traceback) when the API
cannot be reached, after a short first-contact retry."""

from __future__ import annotations

import subprocess
import sys

from mtfleet.fleet.localfleet import free_port


def test_unreachable_api_is_a_one_line_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    for args in (["translate", "hi", "--from", "en", "--to", "es"], ["status", "abc"]):
        proc = subprocess.run(
            [sys.executable, "-m", "mtfleet", *args, "--url", url],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 1
        assert f"cannot reach the mtfleet API at {url} (ConnectError" in proc.stderr
        assert "MT_API_URL" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        assert "Traceback" not in proc.stderr
