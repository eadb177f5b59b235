"""Sweep benchmark: a 100 000-arena sweep over 3 parameters (30 turns), one device and two
forced CPU devices, against a Python loop calling ``simulate`` once per point.

    .venv/bin/python bench/sweep.py               # both cases below, 1 and 2 devices
    .venv/bin/python bench/sweep.py --scale 0.2   # a smoke run (grid sides x 0.2)
    .venv/bin/python bench/sweep.py --vs-simulate --runs 10   # sweep 16 x 1024 / simulate 16 384

Two cases of 100 000 arenas: ``points`` (a 100 x 100 x 10 grid, one arena per point) and
``replicates`` (a 10 x 10 x 10 grid, 100 replicates per point).

Each device count runs in its own subprocess (``jax_num_cpu_devices`` must be set before
jax starts); each reports the cold wall time (build, compile and run) and the best of
``--repeat`` warm runs. The loop runs ``simulate(config_at_point, n_arenas=replicates,
history=False, arena_offset=...)`` per point (what a user would write without ``sweep``) on
the first ``--loop-points`` points (1000) after one warm-up call, so it does not pay the
compile either; its time per point is scaled to the sweep's points. Played arena-turns
(turns before each arena ended) are printed beside arena-turns (every arena x 30 turns).

``--vs-simulate``: the seed's payload (``bdpd_jax.default_config()``), a ``sweep`` of 16
regenRate values x 1 024 replicates against ``simulate`` of 16 384 arenas (history off), in
one process: each of ``--runs`` runs calls the two alternately ``--repeat`` times and keeps
each one's best; the ratio of each run is printed, then the median, min-max and quartiles over
runs, for wall time and for process CPU time (all threads: what the run costs, whatever else
the machine runs). The 16 values lie within 2 % of the seed's 0.12, where every arena plays
what the seed's do (played arena-turns printed for both): the ratio is the sweep's overhead,
not other dynamics. Its parts (plan lookup, one chunk's run and columns, the per-point
statistics) are timed in the same loop. Figures: bench/README.md.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from harness import Figures, parser, setup  # bench/ is on a bench script's path

ROOT = Path(__file__).resolve().parents[1]
TURNS = 30


def config() -> dict:
    sys.path.insert(0, str(ROOT / "tests"))
    from payloads import MIXED_PLAYERS, SEED_LOGISTIC

    c = copy.deepcopy(SEED_LOGISTIC)
    c["players"] = copy.deepcopy(MIXED_PLAYERS)
    c["model"]["maxTurns"] = TURNS
    return c


# The two ways to spend 100 000 arenas on 3 parameters: (points, replicates, grid sides).
CASES = {
    "points": (100_000, 1, (100, 100, 10)),  # 100 000 points, one arena each
    "replicates": (1_000, 100, (10, 10, 10)),  # 1 000 points x 100 replicates
}


def grid(case: str, scale: float = 1.0) -> dict:
    import numpy as np

    sides = [max(1, int(round(s * scale))) for s in CASES[case][2]]
    return {
        "model.regenRate": [float(x) for x in np.linspace(0.04, 0.3, sides[0])],
        "players[1].intensity": [float(x) for x in np.linspace(0.1, 1.0, sides[1])],
        "model.commonsCapacity": [float(x) for x in np.linspace(80.0, 240.0, sides[2])],
    }


def worker(n_devices: int, case: str, scale: float, repeat: int) -> dict:
    import jax

    jax.config.update("jax_num_cpu_devices", n_devices)
    from bdpd_jax.sweeps.sweep import sweep

    assert len(jax.local_devices()) == n_devices
    c, g, replicates = config(), grid(case, scale), CASES[case][1]
    t0 = time.perf_counter()
    r = sweep(c, grid=g, replicates=replicates, seed=0, progress=False)
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        sweep(c, grid=g, replicates=replicates, seed=0, progress=False)
        warm.append(time.perf_counter() - t0)
    return {
        "devices": n_devices,
        "arenas": len(r.arenas),
        "points": len(r.points),
        "cold_s": cold,
        "warm_s": min(warm),
        "survival": float(r.arenas["survived"].mean()),
        "build": r.meta["build"],
        "played": int(r.arenas["survival_time"].sum()),
    }


def loop(case: str, scale: float, n_points: int) -> dict:
    from bdpd_jax import simulate
    from bdpd_jax.sweeps.sweep import grid_points

    c, table, replicates = config(), grid_points(grid(case, scale)), CASES[case][1]
    names = list(table.columns)
    rows = list(table.itertuples(index=False, name=None))[:n_points]

    def at(vals):
        d = copy.deepcopy(c)
        d["model"]["regenRate"], d["players"][1]["intensity"], d["model"]["commonsCapacity"] = vals
        return d

    simulate(at(rows[0]), n_arenas=replicates, seed=0, history=False, progress=False)  # compile
    t0 = time.perf_counter()
    surv = 0.0
    played = 0
    for i, vals in enumerate(rows):
        res = simulate(
            at(vals), n_arenas=replicates, seed=0, history=False, progress=False, arena_offset=i * replicates
        )
        surv += float(res.summary["survived"].sum())
        played += int(res.summary["turns_played"].sum())
    wall = time.perf_counter() - t0
    assert names == list(grid(case, scale))
    return {
        "points": len(rows),
        "wall_s": wall,
        "per_point_s": wall / len(rows),
        "survival": surv / (len(rows) * replicates),
        "played": played,
    }


def vs_simulate(runs: int, repeat: int, width: int = 16_384, n_points: int = 16) -> dict:
    """Per run: the best wall and CPU seconds of ``sweep``, ``simulate`` and the sweep's parts,
    interleaved; then each run's sweep / simulate ratio (see the module docstring)."""
    import numpy as np

    import bdpd_jax
    from bdpd_jax.sweeps.results import aggregate
    from bdpd_jax.sweeps.sweep import RunOptions, cached_plan, point_steps, points_table, sweep

    cfg = bdpd_jax.default_config().model_dump()
    r0 = cfg["model"]["regenRate"]
    grid = {"model.regenRate": [float(x) for x in r0 * np.linspace(0.98, 1.02, n_points)]}
    reps = width // n_points
    opts = RunOptions(replicates=reps, progress=False)
    table = points_table(grid, None, None, per_point=point_steps(cfg, opts))
    plan = cached_plan(bdpd_jax.lab.prepare(cfg), table, opts)
    rows = plan.chunk_columns(0)
    calls = {
        "simulate": lambda: bdpd_jax.simulate(cfg, n_arenas=width, history=False, progress=False),
        "sweep": lambda: sweep(cfg, grid=grid, replicates=reps, progress=False),
        "sweep_plan": lambda: cached_plan(
            bdpd_jax.lab.prepare(cfg), points_table(grid, None, None, per_point=point_steps(cfg, opts)), opts
        ),
        "sweep_rows": lambda: plan.chunk_columns(0),
        "sweep_points": lambda: aggregate(rows, plan.names, plan.outcomes()),
    }
    played = {
        "simulate": int(calls["simulate"]().summary["turns_played"].sum()),
        "sweep": int(calls["sweep"]().arenas["survival_time"].sum()),
    }
    for f in calls.values():
        f()  # compiled and warm
    per_run = []
    for r in range(runs):
        best = {k: [math.inf, math.inf] for k in calls}
        for i in range(repeat):
            order = list(calls) if (r + i) % 2 == 0 else [k for k in reversed(calls)]
            for k in order:
                w0, c0 = time.perf_counter(), time.process_time()
                calls[k]()
                w, c = time.perf_counter() - w0, time.process_time() - c0
                best[k] = [min(best[k][0], w), min(best[k][1], c)]
        per_run.append(best)
    return {"played": played, "runs": per_run, "arenas": width, "points": n_points}


def _spread(xs: list[float]) -> str:
    import numpy as np

    q1, med, q3 = np.percentile(xs, [25, 50, 75])
    return f"median {med:.3f}x (min {min(xs):.3f}, max {max(xs):.3f}, IQR {q1:.3f}-{q3:.3f})"


def report_vs_simulate(out: Figures, res: dict) -> None:
    runs = res["runs"]
    print(
        f"sweep of {res['points']} points x {res['arenas'] // res['points']} replicates / simulate of "
        f"{res['arenas']} arenas, seed payload, {len(runs)} runs; played arena-turns: "
        f"sweep {res['played']['sweep']}, simulate {res['played']['simulate']}"
    )
    for j, what in enumerate(("wall", "cpu")):
        ratios = [b["sweep"][j] / b["simulate"][j] for b in runs]
        print(f"  {what}: per run {[round(x, 3) for x in ratios]}")
        print(f"  {what}: {_spread(ratios)}")
        parts = {k: sorted(b[k][j] * 1e3 for b in runs)[len(runs) // 2] for k in runs[0]}
        print(f"  {what} ms, median over runs of each best: " + ", ".join(f"{k} {v:.2f}" for k, v in parts.items()))
        out.emit(f"vs_simulate_{what}", runs=len(runs), ratios=ratios, played=res["played"], parts_ms=parts)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--scale", type=float, default=1.0, help="scale every grid side (smoke runs: 0.2)")
    ap.add_argument("--repeat", type=int, default=2, help="warm runs per device count (best kept)")
    ap.add_argument("--loop-points", type=int, default=1000, help="points the loop runs (then per point)")
    ap.add_argument("--devices", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--vs-simulate", action="store_true", help="a 16 x 1024 sweep / simulate of 16 384 arenas")
    ap.add_argument("--runs", type=int, default=10, help="runs of --vs-simulate (its spread is over them)")
    a = ap.parse_args()
    if a.vs_simulate:
        setup()
        report_vs_simulate(Figures("sweep", a.json), vs_simulate(a.runs, max(a.repeat, 3)))
        return
    if a.worker is not None:
        print("RESULT " + json.dumps(worker(a.worker, a.cases[0], a.scale, a.repeat)))
        return
    setup()
    out = Figures("sweep", a.json)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    print(f"CPU cores: {os.cpu_count()}, {TURNS} turns, 3 parameters")
    for case in a.cases:
        runs = []
        for nd in a.devices:
            p = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--worker",
                    str(nd),
                    "--cases",
                    case,
                    "--scale",
                    str(a.scale),
                    "--repeat",
                    str(a.repeat),
                ],
                capture_output=True,
                text=True,
                env=env,
            )
            if p.returncode != 0:
                sys.exit(p.stderr[-3000:])
            runs.append(json.loads(p.stdout.split("RESULT ", 1)[1]))
        n_points, reps = runs[0]["points"], CASES[case][1]
        lp = loop(case, a.scale, min(a.loop_points, n_points))
        loop_full = lp["per_point_s"] * n_points  # = wall_s when the loop ran every point
        print(
            f"[{case}] sweep of {n_points} points x {reps} replicate(s) = {runs[0]['arenas']} arenas "
            f"(build: {runs[0]['build']})"
        )
        for r in runs:
            at, pl = r["arenas"] * TURNS, r["played"]
            print(
                f"  {r['devices']} device(s): cold {r['cold_s']:.2f} s "
                f"({at / r['cold_s'] / 1e6:.2f} M arena-turns/s), "
                f"warm {r['warm_s']:.2f} s ({at / r['warm_s'] / 1e6:.2f} M arena-turns/s, "
                f"{pl / r['warm_s'] / 1e6:.2f} M played); "
                f"vs loop: {loop_full / r['cold_s']:.0f}x cold, {loop_full / r['warm_s']:.0f}x warm"
            )
        extra = "" if lp["points"] == n_points else f"; {loop_full:.0f} s for all {n_points} points"
        print(
            f"  loop of simulate(n_arenas={reps}): {lp['points']} points in {lp['wall_s']:.1f} s "
            f"({lp['per_point_s'] * 1e3:.2f} ms/point{extra}), "
            f"{lp['points'] * reps * TURNS / lp['wall_s'] / 1e6:.3f} M arena-turns/s "
            f"({lp['played'] / lp['wall_s'] / 1e6:.3f} M played)"
        )
        for r in runs:
            out.emit(
                case,
                replicates=reps,
                turns=TURNS,
                # the sweep's figures as its worker measured them, the loop's, and the one against the other
                **{k: r[k] for k in ("points", "arenas", "devices", "build", "cold_s", "warm_s", "survival")},
                **{f"loop_{k}": lp[k] for k in ("points", "per_point_s", "survival")},
                **{f"vs_loop_{run}": loop_full / r[f"{run}_s"] for run in ("cold", "warm")},
            )
        print(
            f"  survival: sweep {runs[0]['survival']:.4f}, loop {lp['survival']:.4f} "
            f"({'same arenas' if lp['points'] == n_points else 'loop on the first points'})"
        )


if __name__ == "__main__":
    main()
