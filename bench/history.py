"""What history costs: ``simulate(history=True)`` against ``simulate(history=False)``.

At B = 16384, T = 30 (bench/throughput.py's config: 4 players, arenas kept alive, so every
turn is a row: 491 520 turn rows, 1 966 080 player rows), interleaved in one process, best
of ``--reps`` each:

- ``no_history``: ``simulate(history=False)`` (one program, summary only);
- ``history``: ``simulate(history=True)`` (the run with its records; frames not yet built);
- ``history_frames``: the same, then ``Results.turns`` and ``Results.players`` built;
- ``program``: the history run's compiled program alone (``compiled_whole_history``), the
  floor of ``history``.

Each figure is printed and written as one JSON line (``--json FILE`` appends it).

    python bench/history.py [--arenas 16384] [--turns 30] [--reps 7] [--json FILE]
"""

from __future__ import annotations

import functools
import math

from harness import Figures, best_of, parser, setup

setup()

import jax  # noqa: E402
import numpy as np  # noqa: E402
from throughput import config  # noqa: E402

import bdpd_jax  # noqa: E402
from bdpd_jax import lab  # noqa: E402


def calls(b: int, turns: int) -> dict:
    """The four timed calls of one config (each returns once its work is done)."""
    cfg = config(turns)
    run = functools.partial(bdpd_jax.simulate, cfg, n_arenas=b, progress=False)

    def frames() -> None:
        res = run(history=True)
        assert len(res.turns) == b * turns and len(res.players) == 4 * b * turns

    prep = lab.prepare(cfg)
    params = prep.params_for(turns)
    program = lab.compiled_whole_history(prep.game, turns, 1)
    words = lab.key_words(0, np.arange(b))
    return {
        "no_history": functools.partial(run, history=False),
        "history": functools.partial(run, history=True),
        "history_frames": frames,
        "program": lambda: jax.block_until_ready(program(*words, params, prep.max_yield)),
    }


def main(argv: list[str] | None = None) -> None:
    ap = parser(__doc__)
    ap.add_argument("--arenas", type=int, default=16384)
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args(argv)
    fs = calls(a.arenas, a.turns)
    for f in fs.values():
        f()  # compile and warm up
    best = best_of(fs, a.reps)
    ratio = best["history"] / best["no_history"]
    for k, v in best.items():
        print(f"{k:>15}: {v * 1e3:8.2f} ms ({v / best['no_history']:.2f}x no_history)")
    print(f"history / no_history = {ratio:.2f} (target <= 2)" + ("" if math.isfinite(ratio) else " (n/a)"))
    Figures("history", a.json).emit(
        f"B{a.arenas}_T{a.turns}",
        arenas=a.arenas,
        turns=a.turns,
        reps=a.reps,
        **{f"{k}_ms": round(v * 1e3, 2) for k, v in best.items()},
        history_over_no_history=round(ratio, 2),
        frames_over_no_history=round(best["history_frames"] / best["no_history"], 2),
    )


if __name__ == "__main__":
    main()
