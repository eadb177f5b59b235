"""Throughput of the governance layer against the plain game (issue 4 target: <= 2x cost).

Governance case, as the issue states it: 2 pacts (a harvest_cap and a no_aggression,
pre-declared active), a graduated ladder [1, 3, 10], talk on (announcements, one complying
player, one accepting by rule). The "+ scripted writes" case adds a pledge (turn 3) and a
proposal (turn 2): 4 pact slots and the registry writes on the turns they happen. Same
players and engine as the plain case. The plain and governance runs alternate, best of
``--reps``; compile time is reported apart.

    .venv/bin/python bench/governance.py [--batch 16384] [--turns 100] [--reps 3] [--json PATH]
"""

from __future__ import annotations

import copy
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Figures, best_of, parser, setup  # noqa: E402

setup()
import jax  # noqa: E402
import numpy as np  # noqa: E402

import bdpd_jax  # noqa: E402
from bdpd_jax import lab  # noqa: E402

PLAIN = {
    "model": {"maxPlayers": 4, "minPlayers": 4, "maxTurns": 100},
    "players": [{"strategy": s} for s in ("aggressive", "conservative", "adaptive", "random")],
}
GOV = copy.deepcopy(PLAIN)
GOV["players"][0]["talk"] = {"announce": "biased", "bias": 0.3}
GOV["players"][1]["talk"] = {"announce": "honest", "comply": True}
GOV["players"][2]["talk"] = {"announce": "honest", "accept": "min_cap", "acceptMinCap": 1.0}
GOV["pacts"] = [
    {"parties": [0, 1, 2, 3], "terms": {"type": "harvest_cap", "maxHarvest": 2.5}},
    {"parties": [0, 1, 2, 3], "terms": {"type": "no_aggression", "tolerance": 0.2}},
]
GOV["perturbations"] = [
    {"id": "g", "type": "sanction_graduated", "trigger": {"kind": "pact_violation"}, "payload": {"ladder": [1, 3, 10]}}
]
SCRIPTED = copy.deepcopy(GOV)
SCRIPTED["players"][1]["talk"]["pledge"] = {"turn": 3, "maxHarvest": 1.5}
SCRIPTED["players"][3]["talk"] = {
    "propose": {"turn": 2, "parties": [0, 1, 2, 3], "terms": {"type": "harvest_cap", "maxHarvest": 2.0}}
}
CASES = {"plain": PLAIN, "governance": GOV, "+ scripted writes": SCRIPTED}


def compiled(cfg: dict, b: int, turns: int):
    """(run, args, compile seconds) for one config at batch size b."""
    prep = bdpd_jax.lab.prepare(cfg)
    pb = lab.batch_params(prep, b)
    keys = lab.arena_keys(0, np.arange(b))
    init = lab.compiled_init(prep.game)
    t0 = time.perf_counter()
    state = init(keys, pb)
    run = lab.compiled_run(prep.game, turns, False).lower(keys, state, pb).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(run(keys, state, pb))
    return run, (keys, state, pb), compile_s


def bench(cases: dict, b: int, turns: int, reps: int) -> dict:
    """Best run time of each case; the cases alternate rep by rep, so a change of machine
    speed during the run touches them alike."""
    progs = {name: compiled(cfg, b, turns) for name, cfg in cases.items()}
    best = best_of({name: (lambda run=run, args=args: run(*args)) for name, (run, args, _) in progs.items()}, reps)
    return {
        name: {"compile_s": progs[name][2], "run_s": best[name], "arena_turns_per_s": b * turns / best[name]}
        for name in cases
    }


def main() -> None:
    ap = parser(__doc__, batch=16384, turns=100, reps=10)
    a = ap.parse_args()
    out = Figures("governance", a.json)
    print(f"device: {jax.devices()[0]}  B={a.batch} T={a.turns}")
    res = bench(CASES, a.batch, a.turns, a.reps)
    plain = res["plain"]["arena_turns_per_s"]
    for name, r in res.items():
        ratio = "" if name == "plain" else f"  cost {plain / r['arena_turns_per_s']:.2f}x the plain game's time"
        print(
            f"{name:>18}: compile {r['compile_s']:.2f} s, {r['run_s'] / a.turns * 1e3:.3f} ms/turn, "
            f"{r['arena_turns_per_s']:.3e} arena-turns/s{ratio}"
        )
    for name, r in res.items():
        out.emit(name, arenas=a.batch, turns=a.turns, **r, cost_vs_plain=plain / r["arena_turns_per_s"])
    ratio = plain / res["governance"]["arena_turns_per_s"]
    print(f"governance cost: {ratio:.2f}x the plain game's time (target <= 2x): {'OK' if ratio <= 2 else 'OVER'}")


if __name__ == "__main__":
    main()
