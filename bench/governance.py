"""Throughput of the governance layer against the plain game (issue 4 target: <= 2x cost).

Governance case: 2 pacts (a harvest_cap and a no_aggression, pre-declared active), a
graduated ladder [1, 3, 10], talk on (announcements, one complying player, a pledge and a
proposal). Same players and engine as the plain case. Compile time is reported apart.

    .venv/bin/python bench/governance.py [--batch 16384] [--turns 100] [--reps 3]
"""

from __future__ import annotations

import argparse
import copy
import importlib
import time

import jax
import numpy as np

from bdpd_jax.build import broadcast_batch, build
from bdpd_jax.config import ArenaConfig

sim = importlib.import_module("bdpd_jax.simulate")

PLAIN = {
    "model": {"maxPlayers": 4, "minPlayers": 4, "maxTurns": 100},
    "players": [{"strategy": s} for s in ("aggressive", "conservative", "adaptive", "random")],
}
GOV = copy.deepcopy(PLAIN)
GOV["players"][0]["talk"] = {"announce": "biased", "bias": 0.3}
GOV["players"][1]["talk"] = {"announce": "honest", "comply": True, "pledge": {"turn": 3, "maxHarvest": 1.5}}
GOV["players"][2]["talk"] = {"announce": "honest", "accept": "min_cap", "acceptMinCap": 1.0}
GOV["players"][3]["talk"] = {"propose": {"turn": 2, "parties": [0, 1, 2, 3], "terms": {"type": "harvest_cap", "maxHarvest": 2.0}}}
GOV["pacts"] = [
    {"parties": [0, 1, 2, 3], "terms": {"type": "harvest_cap", "maxHarvest": 2.5}},
    {"parties": [0, 1, 2, 3], "terms": {"type": "no_aggression", "tolerance": 0.2}},
]
GOV["perturbations"] = [{"id": "g", "type": "sanction_graduated", "trigger": {"kind": "pact_violation"},
                         "payload": {"ladder": [1, 3, 10]}}]


def bench(cfg: dict, b: int, turns: int, reps: int) -> dict:
    game, params = build(ArenaConfig.model_validate(cfg))
    pb = broadcast_batch(params, b)
    keys = sim.arena_keys(0, np.arange(b))
    init = sim.compiled_init(game)
    fn = sim.compiled_run(game, turns, False)
    t0 = time.perf_counter()
    state = init(keys, pb)
    lowered = fn.lower(keys, state, pb).compile()
    compile_s = time.perf_counter() - t0
    times = []
    for _ in range(reps):
        state = init(keys, pb)
        jax.block_until_ready(state)
        t0 = time.perf_counter()
        out, _ = lowered(keys, state, pb)
        jax.block_until_ready(out)
        times.append(time.perf_counter() - t0)
    run = min(times)
    return {"compile_s": compile_s, "run_s": run, "arena_turns_per_s": b * turns / run}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16384)
    ap.add_argument("--turns", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    print(f"device: {jax.devices()[0]}  B={a.batch} T={a.turns}")
    res = {name: bench(cfg, a.batch, a.turns, a.reps) for name, cfg in (("plain", PLAIN), ("governance", GOV))}
    for name, r in res.items():
        print(f"{name:>10}: compile {r['compile_s']:.2f} s, run {r['run_s']:.3f} s, "
              f"{r['arena_turns_per_s']:.3e} arena-turns/s")
    ratio = res["plain"]["arena_turns_per_s"] / res["governance"]["arena_turns_per_s"]
    print(f"governance cost: {ratio:.2f}x the plain game's time (target <= 2x): {'OK' if ratio <= 2 else 'OVER'}")


if __name__ == "__main__":
    main()
