"""Compile time and peak memory of a live arena's create + start + first tick, against the
number of players and of pact slots (issue 14 item 3: the bounds in bdpd_jax/config/limits.py).

Each point runs in a fresh process (no warm jit caches, no persistent compile cache): N-1
builtin players plus one scripted external player, so the arena has the tools and the
governance layer with ``pact_slots`` slots (the server's worst case: talk on, perturbable),
optionally with perturbation specs (turn-triggered, mixed types) and a graduated ladder.
"compile s" is the first tick's wall time minus the second's (start + trace + XLA compile),
"compile CPU s" the same in process CPU time (user + system: on a loaded machine the better
estimate of a quiet machine's wall time, the compile being mostly one thread);
"peak RSS" is the process's maximum resident set. A point whose RSS passes --max-gb or whose
time passes --timeout is killed and reported as such.

    .venv/bin/python bench/compile_scaling.py [--points 4x16 32x16 4x64 ...] [--write]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from harness import Figures, parser  # bench/ is on a bench script's path

HERE = Path(__file__).resolve().parent

CHILD = textwrap.dedent("""
    import json, resource, sys, time
    import bdpd_jax
    bdpd_jax.configure()
    n, slots, specs, ladder = (int(x) for x in sys.argv[1:5])
    from bdpd_jax.host.live.arena import Arena
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cfg = {"model": {"maxPlayers": n, "minPlayers": 1, "maxTurns": 10}}
    kinds = [("regen_shock", {"factor": 0.9}), ("commons_shock", {"amount": -1.0}),
             ("capacity_shock", {"factor": 0.99}), ("wealth_shock", {"amount": 1.0}),
             ("threshold_shift", {"delta": 0.5}), ("observability_flip", {"variable": "commonsStock"})]
    cfg["perturbations"] = [{"id": f"p{i}", "type": kinds[i % len(kinds)][0], "payload": kinds[i % len(kinds)][1],
                             "trigger": {"kind": "turn", "turn": 2 + i}} for i in range(specs)]
    if ladder:
        cfg["perturbations"].append({"id": "ladder", "type": "sanction_graduated",
                                     "trigger": {"kind": "pact_violation"},
                                     "payload": {"ladder": [float(k) for k in range(1, ladder + 1)]}})
    def cpu():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime
    t0, c0 = time.perf_counter(), cpu()
    a = Arena(cfg, seed=0, pact_slots=slots, perturbable=True)
    for i in range(n - 1):
        a.join({"strategy": "conservative"})
    a.join({"agentType": "scripted", "name": "ext", "script": [{"harvest": 0.1}]})
    a.start()
    a.tick()
    t1, c1 = time.perf_counter(), cpu()
    a.tick()
    t2, c2 = time.perf_counter(), cpu()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"compile_s": (t1 - t0) - (t2 - t1), "tick_s": t2 - t1,
                      "compile_cpu_s": (c1 - c0) - (c2 - c1),
                      "import_rss_gb": base / 2**20, "peak_rss_gb": peak / 2**20}))
""")


def rss_gb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0.0


def point(n: int, slots: int, timeout: float, max_gb: float, specs: int = 0, ladder: int = 0) -> dict:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "BDPD_MAX_PLAYERS": "4096", "BDPD_MAX_PACT_SLOTS": "4096"}
    env.pop("BDPD_JAX_CACHE", None)
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(n), str(slots), str(specs), str(ladder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    t0, worst = time.perf_counter(), 0.0
    while p.poll() is None:
        worst = max(worst, rss_gb(p.pid))
        if worst > max_gb or time.perf_counter() - t0 > timeout:
            p.kill()
            p.wait()
            why = f"RSS > {max_gb} GB" if worst > max_gb else f"> {timeout:.0f} s"
            return {"players": n, "slots": slots, "killed": why}
        time.sleep(0.05)
    out, err = p.communicate()
    if p.returncode != 0:
        return {"players": n, "slots": slots, "killed": f"rc {p.returncode}: {err.strip().splitlines()[-1:]}"}
    return {"players": n, "slots": slots, **json.loads(out.strip().splitlines()[-1])}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument(
        "--points",
        nargs="+",
        default=["2x4", "4x16", "8x16", "16x16", "32x16", "4x4", "4x32", "4x64"],
        help="PLAYERSxSLOTS[xSPECSxLADDER]: players, pact slots, perturbation specs, ladder rungs",
    )
    ap.add_argument("--timeout", type=float, default=150.0)
    ap.add_argument("--max-gb", type=float, default=3.5)
    ap.add_argument("--write", action="store_true", help="append the table to bench/compile_scaling_last.md")
    args = ap.parse_args()
    out = Figures("compile_scaling", args.json)
    rows = []
    print(
        "| players | pact slots | specs + ladder | compile s (wall) | compile CPU s | tick ms | peak RSS GB | "
        "RSS after import GB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for pt in args.points:
        n, s, k, lad = ([int(x) for x in pt.split("x")] + [0, 0])[:4]
        r = point(n, s, args.timeout, args.max_gb, k, lad)
        rows.append(r)
        out.emit(pt, players=n, pact_slots=s, specs=k, ladder=lad, **r)
        if "killed" in r:
            line = f"| {n} | {s} | {k} + {lad} | killed ({r['killed']}) | | | | |"
        else:
            line = (
                f"| {n} | {s} | {k} + {lad} | {r['compile_s']:.2f} | {r['compile_cpu_s']:.2f} | "
                f"{1e3 * r['tick_s']:.1f} | "
                f"{r['peak_rss_gb']:.2f} | {r['import_rss_gb']:.2f} |"
            )
        print(line, flush=True)
        if args.write:
            with open(HERE / "compile_scaling_last.md", "a") as fh:
                fh.write(line + "\n")


if __name__ == "__main__":
    main()
