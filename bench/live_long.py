"""Built-in players through ``LiveBatch`` over a long run: arena-turns/s and ms per tick by
window, to see a slowdown as the run's history grows (the cyclic GC re-scanning the turn
records was one: 7 ms a tick for 40 ticks, then 19.5 ms).

N arenas x 4 built-in players (conservative, adaptive) on the logistic engine with
``threshold = 0`` and no hidden reserve, so no arena ends within the run and every tick is
a full turn of all N arenas. Each mode runs in its own subprocess (the GC is per process),
alternating, ``--reps`` times: ``gc_freeze`` on (the default: each tick's records are frozen
out of the collector's full passes), off, and optionally the same run from another checkout
(``--base PATH``, e.g. the commit before this change, extracted with ``git archive``), so
before and after are measured side by side under the same machine load.

    .venv/bin/python bench/live_long.py [--arenas 100] [--ticks 1000] [--window 100] [--base /tmp/base]
    .venv/bin/python bench/live.py --long-ticks 1000     # the same, from bench/live.py
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from harness import Figures, parser  # bench/ is on a bench script's path

ROOT = Path(__file__).resolve().parents[1]

CONFIG = {
    "model": {"maxPlayers": 4, "minPlayers": 4, "maxTurns": 100000, "threshold": 0.0, "useHiddenReserve": False},
    "observability": {
        "commonsStock": {"visible": True, "noise": 0.05},
        "nPlayers": {"visible": True},
        "othersHarvest": {"visible": True},
    },
}


def child(root: str, n: int, ticks: int, window: int, gc_freeze: bool) -> dict:
    sys.path.insert(0, root)
    import bdpd_jax

    bdpd_jax.configure()
    import inspect

    from bdpd_jax.host.live.arena import Arena
    from bdpd_jax.host.live.live_batch import LiveBatch

    arenas = []
    for k in range(n):
        a = Arena(copy.deepcopy(CONFIG), seed=0, arena_index=k, fsync=False)
        for i in range(4):
            a.join({"agentType": "builtin", "name": f"b{i}", "strategy": ("conservative", "adaptive")[i % 2]})
        arenas.append(a)
    import gc

    full = [0, 0.0, 0.0]  # full collections: count, seconds, start time

    def watch(phase, info):
        if info["generation"] == 2:
            if phase == "start":
                full[2] = time.perf_counter()
            else:
                full[0] += 1
                full[1] += time.perf_counter() - full[2]

    gc.callbacks.append(watch)
    kw = {"gc_freeze": gc_freeze} if "gc_freeze" in inspect.signature(LiveBatch).parameters else {}
    batch = LiveBatch(arenas, **kw)
    t0 = time.perf_counter()
    batch.tick()
    first = time.perf_counter() - t0
    full[:2] = [0, 0.0]
    wall, cpu = [], []
    t0, c0 = time.perf_counter(), time.process_time()
    w0, p0 = t0, c0
    for k in range(ticks):
        batch.tick()
        if (k + 1) % window == 0:
            w, p = time.perf_counter(), time.process_time()
            wall.append((w - w0) / window * 1000)
            cpu.append((p - p0) / window * 1000)
            w0, p0 = w, p
    total = time.perf_counter() - t0
    played = sum(a.turn for a in arenas) - n  # turns played after the first tick (records may be bounded)
    return {
        "root": root,
        "gc_freeze": bool(kw.get("gc_freeze", False)),
        "supported": bool(kw),
        "first_s": first,
        "ticks": ticks,
        "played": played,
        "gc_full": full[0],
        "gc_full_s": full[1],
        "arena_turns_s": played / total,
        "wall_ms": wall,
        "cpu_ms": cpu,
        "load": os.getloadavg()[0],
    }


def spawn(root: str, n: int, ticks: int, window: int, gc_freeze: bool) -> dict:
    code = (
        f"import json, sys; sys.path.insert(0, {str(ROOT / 'bench')!r}); import live_long; "
        f"print(json.dumps(live_long.child({root!r}, {n}, {ticks}, {window}, {gc_freeze})))"
    )
    env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", env=env)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
    if not lines:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(lines[-1])


def table(rows: list[dict]) -> str:
    out = [
        "| Build | gc_freeze | First tick | Ticks | arena-turns/s | ms/tick (wall), first -> last window "
        "| CPU ms/tick, first -> last window (min) | full GC passes (time) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        name = "this" if Path(r["root"]).resolve() == ROOT else Path(r["root"]).name
        flag = ("on" if r["gc_freeze"] else "off") if r["supported"] else "(none)"
        w, c = r["wall_ms"], r["cpu_ms"]
        out.append(
            f"| {name} | {flag} | {r['first_s']:.2f} s | {r['ticks']} | {r['arena_turns_s']:.0f} "
            f"| {w[0]:.1f} -> {w[-1]:.1f} (max {max(w):.1f}) | {c[0]:.1f} -> {c[-1]:.1f} ({min(c):.1f}) "
            f"| {r['gc_full']} ({r['gc_full_s']:.2f} s) |"
        )
    return "\n".join(out)


def main(argv=None) -> None:
    ap = parser(__doc__, arenas=100, ticks=1000, window=100, reps=1)
    ap.add_argument("--base", help="another checkout's root, run side by side (before/after)")
    ap.add_argument("--no-off", action="store_true", help="skip the gc_freeze=False run")
    args = ap.parse_args(argv)
    out = Figures("live_long", args.json)
    modes = [(str(ROOT), True)] + ([] if args.no_off else [(str(ROOT), False)])
    if args.base:
        modes.append((args.base, False))
    rows = []
    for _ in range(args.reps):
        for root, freeze in modes:
            r = spawn(root, args.arenas, args.ticks, args.window, freeze)
            print(
                json.dumps({k: (([round(x, 2) for x in v]) if isinstance(v, list) else v) for k, v in r.items()}),
                flush=True,
            )
            rows.append(r)
            out.emit("ticks", **r)  # r names its root and the gc_freeze in force
    print(table(rows))


if __name__ == "__main__":
    main()
