"""DeepL's translation-memory import keeps each key's share of memory work: its upload is read
by the same import as ``/v1``'s, holding one of the key's ``MT_TM_WORK_PER_KEY``; past them the
upload URL answers 429 with Retry-After, which the official ``deepl`` client retries, and the
import goes through once the key's own work has ended (the app served by uvicorn in a thread,
a real Redis, real document processes)."""

from __future__ import annotations

import threading
import time

import deepl
import httpx
import redis

from mtfleet.core.apikeys import KeyStore
from tests.integration.test_tm_api import Held, app_for, big_tmx, in_thread, serving, upload_to


def test_a_deepl_import_waits_for_its_keys_share_of_memory_work(
    redis_url: str, r: redis.Redis
) -> None:
    key, token = KeyStore(r, cache_s=0).create("flood", rate="none")
    app = app_for(redis_url, auth="required", auth_cache_s=0)
    tmx = big_tmx(300)
    with serving(app) as url:
        held = Held(app, key.id)
        flood = [in_thread(upload_to, url, token, tmx) for _ in range(2)]
        deadline = time.monotonic() + 30
        while held.waiting < 2:  # both /v1 imports hold the key's share
            assert time.monotonic() < deadline, "the /v1 imports never reached the API"
            time.sleep(0.02)

        client = deepl.DeepLClient(token, server_url=url)
        created = client.create_translation_memory_import("products.tmx", len(tmx))
        refused = httpx.put(created.upload_url, content=tmx, timeout=30)
        assert refused.status_code == 429, refused.text
        assert "MT_TM_WORK_PER_KEY=2" in refused.json()["message"]
        assert int(refused.headers["retry-after"]) >= 1
        assert client.get_translation_memory_job(created.job_id).status == "awaiting_input"

        threading.Timer(1.0, held.release).start()  # the key's own imports end meanwhile
        client.upload_translation_memory_file(created, tmx)  # retried past the 429s
        done = client.wait_until_translation_memory_job_done(created.job_id, timeout_s=60)
        assert done.ok and done.result is not None, done
        tm = done.result.translation_memory_id
        assert tm is not None and client.get_translation_memory(tm).segment_count == 300
        for thread, got in flood:
            thread.join(60)
            assert got[0].status_code == 201, got[0].text
