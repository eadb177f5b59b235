"""Issue 23, item 2: one lifecycle lock per arena. Threads race create, join, start, tick,
perturb, close and DELETE on a few arenas of a uvicorn server on loopback (bounded time).

Before the lock: 0-2 answers of 500 per run, deleted arenas back as ``interrupted`` (their
folder recreated by a late write) and never deletable again."""

from __future__ import annotations

import json
import random
import threading
import time

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from server_helpers import keys_of, payload, serve  # noqa: E402

from bdpd_jax.host.live.persist import read_jsonl  # noqa: E402
from bdpd_jax.host.live.replay import replay  # noqa: E402

N_ARENAS = 6
DEADLINE_S = 240.0


def _ops(base: str, owner: dict, player: dict, delete: bool) -> list[tuple[str, str, dict, dict | None]]:
    ops = [
        ("POST", f"{base}/join", player, {"strategy": "adaptive"}),
        ("POST", f"{base}/start", owner, {}),
        ("POST", f"{base}/tick", owner, None),
        ("POST", f"{base}/tick", owner, None),
        ("POST", f"{base}/perturb", owner, {"type": "commons_shock", "payload": {"amount": -3.0}}),
        ("POST", f"{base}/tick", owner, None),
        ("POST", f"{base}/close", owner, None),
        ("GET", f"{base}/summary", owner, None),
    ]
    if delete:
        ops += [("DELETE", base, owner, None), ("DELETE", base, owner, None)]
    return ops


def test_lifecycle_race_keeps_every_invariant(tmp_path) -> None:
    rnd = random.Random(23)
    answers: list[tuple[str, str, int, str]] = []
    lock = threading.Lock()
    t_end = time.monotonic() + DEADLINE_S
    with serve(tmp_path, workers=2) as url, httpx.Client(base_url=url, timeout=DEADLINE_S) as c:
        cfg = payload(max_turns=5, players=2, maxPlayers=3)
        made = [c.post("/api/arenas", json=cfg).json() for _ in range(N_ARENAS)]
        # warm the one compiled game, so the race is about the lifecycle, not a compile
        warm = c.post("/api/arenas", json=payload(max_turns=5, players=2, maxPlayers=3)).json()
        c.post(f"/api/arenas/{warm['arenaId']}/start", headers=keys_of(warm)[0])
        c.post(f"/api/arenas/{warm['arenaId']}/tick", headers=keys_of(warm)[0])
        jobs = []
        for k, m in enumerate(made):
            owner, player, _ = keys_of(m)
            for op in _ops(f"/api/arenas/{m['arenaId']}", owner, player, delete=k % 2 == 0):
                jobs.append((m["arenaId"], *op))
        rnd.shuffle(jobs)

        def run(job) -> None:
            aid, method, path, headers, body = job
            time.sleep(rnd.random() * 0.05)
            with httpx.Client(base_url=url, timeout=max(1.0, t_end - time.monotonic())) as cc:
                r = cc.request(method, path, headers=headers, json=body)
            with lock:
                answers.append((aid, f"{method} {path.rsplit('/', 1)[-1]}", r.status_code, r.text[:200]))

        threads = [threading.Thread(target=run, args=(j,), daemon=True) for j in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=max(0.0, t_end - time.monotonic()))
        assert not any(t.is_alive() for t in threads), "a request did not finish in time"
        assert len(answers) == len(jobs)
        bad = [a for a in answers if not (200 <= a[2] < 300 or 400 <= a[2] < 500)]
        assert not bad, bad
        for k, m in enumerate(made):
            aid, owner = m["arenaId"], keys_of(m)[0]
            folder = tmp_path / aid
            if k % 2 == 0:  # deleted: gone from memory, disk and history, and stays gone
                assert any(a[0] == aid and a[1].startswith("DELETE") and a[2] == 200 for a in answers)
                assert c.get(f"/api/arenas/{aid}").status_code == 404
                assert not folder.exists()
                assert aid not in {h["arenaId"] for h in c.get("/api/arenas/history").json()["arenas"]}
                continue
            status = c.get(f"/api/arenas/{aid}").json()["status"]
            if status == "waiting":  # its start lost the race with close: nothing on disk to replay
                continue
            if status == "running":
                assert c.post(f"/api/arenas/{aid}/close", headers=owner).status_code == 200
            summary = json.loads((folder / "summary.json").read_text())
            turns = [r for r in read_jsonl(folder / "turns.jsonl") if "event" not in r]
            assert [r["turn"] for r in turns] == list(range(1, len(turns) + 1))
            assert json.loads(json.dumps(replay(folder).close())) == summary  # the folder is whole
