"""Where a turn's time goes: XLA:CPU's own per-op timings of the compiled chunk program.

Runs the throughput game (bench/throughput.py's config: 4 players, exact Gaussian noise on
commonsStock, histories off) at B arenas for T turns under ``jax.profiler.trace`` with
XLA's per-thunk trace events on, and prints each op's time per turn, largest first, with its
share of the loop: the profile behind bench/README.md's "Where a turn's time goes".

    python bench/profile_turn.py                 # B = 16384, T = 30, 5 calls
    python bench/profile_turn.py --arenas 8192 --lanes 4
"""

from __future__ import annotations

import collections
import glob
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Figures, parser  # noqa: E402

import bdpd_jax  # noqa: E402

# XLA's per-op trace events: read when the backend starts, so set before jax is imported
os.environ["XLA_FLAGS"] = bdpd_jax.configure()["XLA_FLAGS"] + " --xla_cpu_enable_xprof_traceme=true"

import jax  # noqa: E402
import numpy as np  # noqa: E402

from bdpd_jax import lab  # noqa: E402


def op_times(fn, calls: int) -> dict[str, tuple[float, int]]:
    """{op name: (total microseconds, count)} of the XLA ops run by ``calls`` calls of fn."""
    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d, create_perfetto_trace=True):
            for _ in range(calls):
                fn()
        (path,) = glob.glob(f"{d}/**/perfetto_trace.json.gz", recursive=True)
        with gzip.open(path) as fh:
            events = json.load(fh)
    events = events["traceEvents"] if isinstance(events, dict) else events
    out: dict[str, list] = collections.defaultdict(lambda: [0.0, 0])
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            out[e["name"]][0] += e["dur"]
            out[e["name"]][1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def main() -> None:
    import throughput

    ap = parser(__doc__, arenas=16384, turns=30, lanes=1, calls=5)
    args = ap.parse_args()
    out = Figures("profile_turn", args.json)
    b, t = args.arenas, args.turns
    prep = bdpd_jax.lab.prepare(throughput.config(t))
    game = prep.game
    pb = lab.batch_params(prep, b)
    keys = lab.arena_keys(0, np.arange(b))
    st = lab.compiled_init(game)(keys, pb)
    run = lab.compiled_run(game, t, False, 1, True, args.lanes)

    def call():
        return jax.block_until_ready(run(keys, st, pb))

    call()
    call()
    times = op_times(call, args.calls)
    n_turns = args.calls * t
    # the ops run once per turn: those counted once per turn (the loop body's ops)
    per_turn = {k: v / n_turns for k, (v, c) in times.items() if c == n_turns and not k.startswith("end: ")}
    total = sum(per_turn.values())
    print(
        f"B={b}, T={t}, lanes={args.lanes}, {args.calls} calls: the loop body's ops, us per turn "
        f"(sum {total:.0f} us; op spans, so ops running side by side overlap)"
    )
    for name, us in sorted(per_turn.items(), key=lambda kv: -kv[1]):
        print(f"  {us:8.1f} us {us / total:6.1%}  {name}")
    out.emit("ops", arenas=b, turns=t, lanes=args.lanes, total_us_per_turn=total, us_per_turn=per_turn)


if __name__ == "__main__":
    main()
