"""Issue 35: no request handler reads a file or replays history on the event loop. Every read
of an arena's folder (turns.jsonl, events.jsonl, meta.json, auth.json, summary.json) and of
the dashboard's pages, on every read route, live and closed, happens in a worker thread: a
spectator reading a long history (the issue: 6 MiB, 6 spectators, /api/health held 1.7 s)
holds up no other request. Asserted structurally (where each read runs), not by timing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from fastapi.testclient import TestClient
from server_helpers import keys_of, payload

from bdpd_jax.config import files
from bdpd_jax.host.live import persist
from bdpd_jax.host.live import replay as replay_mod
from bdpd_jax.host.server import create_app
from bdpd_jax.host.server import live as live_mod
from bdpd_jax.host.server import store as store_mod


def _on_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def test_every_read_route_reads_its_files_in_a_worker_thread(tmp_path, monkeypatch) -> None:
    reads: list[tuple[str, bool]] = []
    read_text = Path.read_text

    def spy_text(self, *a, **k):
        reads.append((self.name, _on_loop()))
        return read_text(self, *a, **k)

    def spy_jsonl(path, *a, **k):
        reads.append((Path(path).name, _on_loop()))
        return persist.read_jsonl(path, *a, **k)

    bounded = files.read_text

    def spy_bounded(path, *a, **k):  # meta.json and auth.json: read bounded (config/files.py)
        reads.append((Path(path).name, _on_loop()))
        return bounded(path, *a, **k)

    monkeypatch.setattr(Path, "read_text", spy_text)
    monkeypatch.setattr(files, "read_text", spy_bounded)
    monkeypatch.setattr(store_mod, "read_text", spy_bounded)
    for mod in (live_mod, store_mod, replay_mod):
        monkeypatch.setattr(mod, "read_jsonl", spy_jsonl)
    with TestClient(create_app(tmp_path)) as client:
        c = client.post("/api/arenas", json=payload(max_turns=6)).json()
        aid, (owner, _, spec) = c["arenaId"], keys_of(c)
        client.post(f"/api/arenas/{aid}/start", headers=owner)
        for _ in range(3):
            client.post(f"/api/arenas/{aid}/tick", headers=owner)
        client.app.state.hub.live[aid].arena._started().records.clear()  # as if evicted: read back from turns.jsonl

        def read_all(closed: bool) -> None:
            gets = [
                ("/", {}),
                (f"/arenas/{aid}", {}),
                (f"/api/arenas/{aid}", {}),
                (f"/api/arenas/{aid}/dashboard", spec),
                (f"/api/arenas/{aid}/owner", owner),
                (f"/api/arenas/{aid}/perturbations", owner),
                ("/api/arenas", owner),
                ("/api/arenas/history", {}),
            ]
            if closed:
                gets += [(f"/api/arenas/{aid}/summary", owner), (f"/api/arenas/history/{aid}/summary", {})]
            for path, h in gets:
                assert client.get(path, headers=h).status_code == 200, path
            with client.stream("GET", f"/api/arenas/{aid}/stream", headers=spec) as s:
                first = next(ln for ln in s.iter_lines() if ln.startswith("data: "))
            assert [t["turn"] for t in json.loads(first[6:])["history"]] == [1, 2, 3]

        read_all(closed=False)
        live_reads = len(reads)
        assert client.post(f"/api/arenas/{aid}/close", headers=owner).status_code == 200
        read_all(closed=True)
    names = {n for n, _ in reads}
    assert live_reads and {"turns.jsonl", "meta.json", "summary.json", "arena.html"} <= names, names
    assert [r for r in reads if r[1]] == [], "files read on the event loop"
