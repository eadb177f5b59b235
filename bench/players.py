"""Many players and many pact slots per arena: compile time, peak memory, player-turns/s.

Each case runs in its own subprocess (cold compile: no persistent cache; peak memory as the
child's ``ru_maxrss``, which includes Python and jax, ~0.4 GB); a watchdog ends a child whose
memory passes ``--mem-limit-gb``. The game: N players, half conservative and half aggressive,
the shipped observability, commons scaled by N / 4 (so every turn does full work), B x N
player slots per batch held near ``--player-slots``. Pact slots: 4 players with the
governance layer (a pre-declared harvest_cap pact and a graduated sanction) and P slots.

    python bench/throughput.py --players 4 16 64 256 1024   # the issue's sweep (this file)
    python bench/players.py --players 4 16 64 256 1024 --slots 16 128
    python bench/players.py --forms 4 8 16 32 64            # both forms side by side
    python bench/players.py --form unrolled --players 64    # the old form (mind memory)

``--forms`` compiles the unrolled and the array form of the same game in one process and
alternates their runs (best of ``--reps``), the way the threshold of kernels/unroll.py was
chosen; ``--slot-forms`` does the same over pact slots.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness import Figures, parser  # bench/ is on a bench script's path

ROOT = Path(__file__).resolve().parents[1]


def _watchdog(limit_gb: float) -> None:
    def watch():
        while True:
            with open("/proc/self/statm") as f:
                rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            if rss > limit_gb * 2**30:
                print(json.dumps({"killed": True, "rss_gb": round(rss / 2**30, 2)}), flush=True)
                os._exit(3)
            time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()


def config(n: int, turns: int, slots: int = 0):
    import bdpd_jax

    d = bdpd_jax.default_config().model_dump()
    d["model"].update(
        maxTurns=turns,
        threshold=0.0,
        regenRate=0.5,
        maxPlayers=max(n, 4),
        minPlayers=1,
        commonsCapacity=150.0 * n / 4,
        commonsInitial=150.0 * n / 4,
    )
    d["players"] = [dict(d["players"][0], strategy="conservative" if 2 * i < n else "aggressive") for i in range(n)]
    if slots:
        d["pacts"] = [{"parties": [0, n - 1], "terms": {"type": "harvest_cap", "maxHarvest": 3.0}}]
        d["perturbations"] = [
            {
                "id": "g",
                "type": "sanction_graduated",
                "trigger": {"kind": "pact_violation", "termType": "harvest_cap"},
                "payload": {"ladder": [1, 3, 10]},
            }
        ]
    return bdpd_jax.ArenaConfig.model_validate(d)


def compiled(n: int, slots: int, b: int, turns: int):
    """(compile seconds, executable, args) of one chunk of ``turns`` turns, histories off."""
    import jax
    import numpy as np

    import bdpd_jax
    from bdpd_jax import lab
    from bdpd_jax.kernels.rollout import init_batch, run_turns

    prep = bdpd_jax.lab.prepare(config(n, turns, slots), governance={"pact_slots": slots} if slots else None)
    game = prep.game
    pb = lab.batch_params(prep, b)
    keys = lab.arena_keys(0, np.arange(b))
    # fresh traces per form (the cached ones of bdpd_jax.simulate would serve either)
    st = jax.block_until_ready(jax.jit(lambda p: init_batch(game, p))(pb))
    fn = jax.jit(lambda k, s, p: run_turns(game, turns, False, k, s, p))
    t0, c0 = time.perf_counter(), time.process_time()
    exe = fn.lower(keys, st, pb).compile()
    COMPILE_CPU.append(time.process_time() - c0)  # robust to other jobs on the machine
    return time.perf_counter() - t0, exe, (keys, st, pb)


COMPILE_CPU: list[float] = []


def timed(exe, args, reps: int) -> float:
    import jax

    jax.block_until_ready(exe(*args))
    best = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(exe(*args))
        best = min(best, time.perf_counter() - t0)
    return best


def child(args) -> None:
    """One case in this process: prints one JSON line."""
    import bdpd_jax

    bdpd_jax.configure()
    _watchdog(args.mem_limit_gb)
    from bdpd_jax.kernels import unroll

    n, slots, b, t = args.child
    forms = {"auto": None, "unrolled": True, "array": False}
    axis = "slots" if slots else "players"  # the axis compared; the other keeps its threshold
    if args.compare:  # both forms, runs alternating
        out = {"n": n, "slots": slots, "b": b, "t": t, "axis": axis}
        exes = {}
        for form in ("unrolled", "array"):
            with unroll.forced(**{axis: forms[form]}):
                out[f"compile_{form}"], *exes[form] = compiled(n, slots, b, t)
        best = {f: math.inf for f in exes}
        for _ in range(args.reps):
            for f, (exe, a) in exes.items():
                best[f] = min(best[f], timed(exe, a, 1))
        for f in exes:
            out[f"run_{f}"] = best[f]
            out[f"player_turns_s_{f}"] = n * b * t / best[f]
        print(json.dumps(out), flush=True)
        return
    with unroll.forced(forms[args.form], forms[args.form]):
        c, exe, a = compiled(n, slots, b, t)
    run = timed(exe, a, args.reps)
    print(
        json.dumps(
            {
                "n": n,
                "slots": slots,
                "b": b,
                "t": t,
                "form": args.form,
                "compile_s": c,
                "compile_cpu_s": COMPILE_CPU[-1],
                "run_s": run,
                "player_turns_s": n * b * t / run,
                "arena_turns_s": b * t / run,
                "maxrss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            }
        ),
        flush=True,
    )


def side_by_side(args) -> None:
    """Several N in this process (thresholds as configured), runs alternating: per
    player-turn ratios that other jobs on the machine touch alike."""
    import bdpd_jax

    bdpd_jax.configure()
    exes = {n: compiled(n, 0, batch_for(n, args.player_slots), args.turns)[1:] for n in args.side_by_side}
    best = {n: math.inf for n in exes}
    for _ in range(args.reps):
        for n, (exe, a) in exes.items():
            best[n] = min(best[n], timed(exe, a, 1))
    base = args.side_by_side[0]
    rate = {n: n * batch_for(n, args.player_slots) * args.turns / best[n] for n in exes}
    for n in exes:
        print(f"N = {n:>5}: {rate[n]:.3e} player-turns/s, {rate[n] / rate[base]:.2f}x N = {base}'s per player-turn")


def spawn(n: int, slots: int, b: int, t: int, args, compare: bool = False) -> dict:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        str(n),
        str(slots),
        str(b),
        str(t),
        "--form",
        args.form,
        "--reps",
        str(args.reps),
        "--mem-limit-gb",
        str(args.mem_limit_gb),
    ]
    if compare:
        cmd.append("--compare")
    env = {k: v for k, v in os.environ.items() if k != "BDPD_JAX_CACHE"}
    env.setdefault("JAX_PLATFORMS", "cpu")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
    if not lines:
        return {"n": n, "slots": slots, "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(lines[-1])


def batch_for(n: int, player_slots: int) -> int:
    return max(1, player_slots // n)


def sweep(args) -> list[dict]:
    rows = []
    for n in args.players or []:
        r = spawn(n, 0, batch_for(n, args.player_slots), args.turns, args)
        rows.append(r)
        print(json.dumps(r), flush=True)
    for p in args.slots or []:
        r = spawn(4, p, batch_for(4, args.player_slots) // 4, args.turns, args)
        rows.append(r)
        print(json.dumps(r), flush=True)
    return rows


def table(rows: list[dict]) -> str:
    base = next(
        (r["player_turns_s"] for r in rows if r.get("n") == 4 and not r.get("slots") and "player_turns_s" in r), None
    )
    out = [
        "| players | pact slots | form | B | compile s (wall / CPU) | peak RSS GB | player-turns/s "
        "| per player-turn vs N = 4 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "player_turns_s" not in r:
            why = r.get("error") or "killed at " + str(r.get("rss_gb")) + " GB"
            out.append(f"| {r['n']} | {r.get('slots', 0)} | | | {why} | | | |")
            continue
        rel = f"{r['player_turns_s'] / base:.2f}x" if base and not r["slots"] else ""
        out.append(
            f"| {r['n']} | {r['slots']} | {r['form']} | {r['b']} "
            f"| {r['compile_s']:.2f} / {r['compile_cpu_s']:.2f} "
            f"| {r['maxrss_gb']:.2f} "
            f"| {r['player_turns_s']:.3e} | {rel} |"
        )
    return "\n".join(out)


def main(argv=None) -> None:
    ap = parser(__doc__)
    ap.add_argument("--players", type=int, nargs="*", help="player counts N (4 players' game scaled)")
    ap.add_argument("--slots", type=int, nargs="*", help="pact slot counts P (4 players, governance on)")
    ap.add_argument("--forms", type=int, nargs="*", help="player counts: unrolled vs array form, one process each")
    ap.add_argument("--slot-forms", type=int, nargs="*", help="pact slot counts: unrolled vs array form")
    ap.add_argument(
        "--side-by-side",
        type=int,
        nargs="*",
        help="player counts compiled in one process, runs alternating (ratios from one run)",
    )
    ap.add_argument("--form", choices=("auto", "unrolled", "array"), default="auto")
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--player-slots", type=int, default=65536, help="B x N per batch")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--mem-limit-gb", type=float, default=3.5)
    ap.add_argument("--child", type=int, nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--compare", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    if args.side_by_side:
        return side_by_side(args)
    out = Figures("players", args.json)
    rows = sweep(args)
    if rows:
        print(table(rows))
    for r in rows or []:
        out.emit("scale", **r)
    for n in args.forms or []:
        r = spawn(n, 0, batch_for(n, args.player_slots), args.turns, args, compare=True)
        print(json.dumps(r), flush=True)
        out.emit("forms", **r)
    for p in args.slot_forms or []:
        r = spawn(4, p, batch_for(4, args.player_slots) // 4, args.turns, args, compare=True)
        print(json.dumps(r), flush=True)
        out.emit("slot_forms", **r)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
