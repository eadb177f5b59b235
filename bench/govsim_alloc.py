"""GovSim's allocation: ``random_units`` against ``simultaneous`` on the GovSim study's batch.

studies/govsim.py's seven rule baselines (fishery, default experiment, 5 players, 12 months),
``--size`` arenas per baseline, each baseline one call of ``lab.outcomes`` on one compiled
program per scheduler (the study's own path: strategy table as params). Reports arena-months/s
per baseline and over the whole batch, interleaved best of ``--repeat``, compile apart. The
issue's target: ``random_units`` within 2x of ``simultaneous``.

    .venv/bin/python bench/govsim_alloc.py                 # 1000 arenas per baseline
    .venv/bin/python bench/govsim_alloc.py --size 4000 --repeat 5
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Figures, best_of, parser, setup  # noqa: E402

setup()

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import bdpd_jax  # noqa: E402
from bdpd_jax import ArenaConfig, Policy  # noqa: E402
from bdpd_jax.kernels.policies import BUILTINS  # noqa: E402
from bdpd_jax.lab import outcomes  # noqa: E402
from bdpd_jax.scenarios import MONTHS, PLAYERS, govsim  # noqa: E402


def fixed(units: float) -> Policy:
    return Policy(lambda obs, mem, key: (jnp.asarray(units, mem.dtype), mem), name=f"fixed_{units:g}")


def share(obs):
    return jnp.floor(jnp.floor(obs["commonsStock"] / 2) / obs["nPlayers"])


FIX9, FIX6, GREEDY, WHOLE = fixed(9), fixed(6), fixed(20), fixed(100)
DEFECTOR = Policy(lambda obs, mem, key: (3 * share(obs), mem), name="defector_3x")
GRAB = Policy(
    lambda obs, mem, key: (jnp.where(obs["turn"] >= MONTHS, obs["commonsStock"], share(obs)), mem), name="grab"
)
ALL = ("idle", "threshold_taker", FIX9, FIX6, GREEDY, DEFECTOR, GRAB, WHOLE)
BASELINES = {  # studies/govsim.py's seven, by the same rules
    "threshold taker": ["threshold_taker"] * PLAYERS,
    "fixed 9": [FIX9] * PLAYERS,
    "fixed 6": [FIX6] * PLAYERS,
    "greedy 20": [GREEDY] * PLAYERS,
    "3x defector": [DEFECTOR] + ["threshold_taker"] * (PLAYERS - 1),
    "end-game grab": [GRAB] * PLAYERS,
    "whole pool": [WHOLE] * PLAYERS,
}


def runner(scheduler: str, players: list, size: int):
    cfg = govsim("fishery", "default", players=["idle"] * PLAYERS)
    cfg["model"]["scheduler"] = scheduler
    prep = bdpd_jax.lab.prepare(ArenaConfig.model_validate(cfg), extra_policies=ALL)
    index = np.asarray([prep.game.policies.index(BUILTINS[s] if isinstance(s, str) else s) for s in players], np.int32)
    params = dataclasses.replace(prep.params, players=dataclasses.replace(prep.params.players, strategy=index))
    return lambda: outcomes(prep, size, params=params)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--size", type=int, default=1000, help="arenas per baseline (the study's SIZE)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    out = Figures("govsim_alloc", args.json)
    calls, first = {}, {}
    for sched in ("simultaneous", "random_units"):
        for name, players in BASELINES.items():
            f = runner(sched, players, args.size)
            t0 = time.perf_counter()
            f()
            first[(sched, name)] = time.perf_counter() - t0
            calls[(sched, name)] = f
    best = best_of(calls, args.repeat)
    months = args.size * MONTHS
    total = {s: sum(best[(s, n)] for n in BASELINES) for s in ("simultaneous", "random_units")}
    for name in BASELINES:
        sim, ru = best[("simultaneous", name)], best[("random_units", name)]
        rates = f"simultaneous {months / sim:10.3g}  random_units {months / ru:10.3g} arena-months/s"
        print(f"{name:16s} {rates}  ratio {ru / sim:5.2f}x")
        out.emit(name, size=args.size, simultaneous_s=sim, random_units_s=ru, ratio=ru / sim)
    ratio = total["random_units"] / total["simultaneous"]
    n = months * len(BASELINES)
    print(
        f"{'whole batch':16s} simultaneous {n / total['simultaneous']:10.3g}  random_units "
        f"{n / total['random_units']:10.3g} arena-months/s  ratio {ratio:5.2f}x (target <= 2x); "
        f"first calls (compile included) {sum(first.values()):.1f} s"
    )
    out.emit("whole batch", size=args.size, ratio=ratio, **{f"{k}_s": v for k, v in total.items()})


if __name__ == "__main__":
    main()
