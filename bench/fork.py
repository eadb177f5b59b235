"""A fork of a served arena (issue 41): ``POST /api/arenas/{id}/fork`` of 1 000 arenas x 100
turns against ``bdpd serve`` in its own process, measured from here.

* the fork's wall time, cold (the server's fork worker process starts, imports jax, replays
  the arena and compiles the fork's program) and warm (a second fork of the same shape);
* while it runs: the round trip of a manual ``POST /tick`` of another arena (4 built-in
  players; replaced by a new one when its game ends) and of ``/api/health``, polled back to
  back: their median, 99th percentile and worst, against the same polled for 5 s before any
  fork.

Run: ``.venv/bin/python bench/fork.py [--quick]`` (``--quick``: 100 arenas).
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from harness import Figures, parser  # noqa: E402  (bench/ is on a bench script's path)
from payloads import SEED_LOGISTIC  # noqa: E402
from server import Server  # noqa: E402

FORK_TURN = 5
FORK_TURNS = 100


def payload(turns: int) -> dict:
    """The seed's logistic payload with 4 built-ins and a commons too large to collapse."""
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(maxTurns=turns, commonsCapacity=1e12, commonsInitial=1e12, minPlayers=2, maxPlayers=8)
    cfg["players"] = [{"strategy": s} for s in ("conservative", "aggressive", "adaptive", "random")]
    return cfg


def ms(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000, q)) if xs else float("nan")


def new_probe(srv: Server) -> str:
    """A manual arena of 4 built-ins to tick, its first ticks out of the way."""
    probe, _ = srv.create(payload(100_000), start="manual")
    for _ in range(5):
        srv.client.post(f"/api/arenas/{probe}/tick", headers=srv.owners[probe])
    return probe


def poll(srv: Server, probes: list[str], until) -> dict:
    """Tick the probe arena and read /api/health back to back until ``until()``; a probe whose
    game ended (a 409) is replaced by a new one (its creation is not timed)."""
    ticks, health, at, ended = [], [], [], 0
    t0 = time.perf_counter()
    while not until():
        t = time.perf_counter()
        r = srv.client.post(f"/api/arenas/{probes[0]}/tick", headers=srv.owners[probes[0]])
        dt = time.perf_counter() - t
        if r.status_code != 200:
            assert r.status_code == 409, r.text
            ended += 1
            probes[0] = new_probe(srv)
            continue
        ticks.append(dt)
        at.append(t - t0)
        t = time.perf_counter()
        srv.client.get("/api/health")
        health.append(time.perf_counter() - t)
    return {
        "ticks": len(ticks),
        "probes_ended": ended,
        "tick_p50_ms": ms(ticks, 50),
        "tick_p99_ms": ms(ticks, 99),
        "tick_max_ms": ms(ticks, 100),
        "tick_max_at_s": at[int(np.argmax(ticks))] if ticks else float("nan"),
        "health_p50_ms": ms(health, 50),
        "health_p99_ms": ms(health, 99),
        "health_max_ms": ms(health, 100),
    }


def fork_under_watch(srv: Server, arena: str, probes: list[str], replicates: int, seed: int) -> dict:
    done: list[tuple[float, int, dict]] = []

    def go():
        t = time.perf_counter()
        r = srv.client.post(
            f"/api/arenas/{arena}/fork",
            headers=srv.owners[arena],
            json={"turn": FORK_TURN, "replicates": replicates, "turns": FORK_TURNS, "seed": seed},
        )
        done.append((time.perf_counter() - t, r.status_code, r.json()))

    th = threading.Thread(target=go)
    th.start()
    watched = poll(srv, probes, lambda: bool(done))
    th.join()
    wall, status, answer = done[0]
    assert status == 200, answer
    assert len(answer["fan"]) == FORK_TURNS, answer
    return {"fork_s": wall, **watched}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="100 arenas instead of 1 000")
    args = ap.parse_args()
    out = Figures("fork", args.json)
    replicates = 100 if args.quick else 1000
    with tempfile.TemporaryDirectory() as root:
        srv = Server(Path(root))
        try:
            arena, _ = srv.create(payload(FORK_TURN + FORK_TURNS), start="manual")
            for _ in range(FORK_TURN):
                srv.client.post(f"/api/arenas/{arena}/tick", headers=srv.owners[arena])
            probes = [new_probe(srv)]
            t_end = time.monotonic() + 5.0
            base = poll(srv, probes, lambda: time.monotonic() > t_end)
            print("no fork", json.dumps({k: round(v, 2) for k, v in base.items()}))
            out.emit("no_fork", **base)
            for case, seed in (("cold", 1), ("warm", 2)):
                r = fork_under_watch(srv, arena, probes, replicates, seed)
                print(f"fork {replicates} x {FORK_TURNS} ({case})", json.dumps({k: round(v, 2) for k, v in r.items()}))
                out.emit(f"fork_{case}", replicates=replicates, turns=FORK_TURNS, **r)
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
