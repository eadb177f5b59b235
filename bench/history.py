"""What history costs: ``simulate(history=True)`` against ``simulate(history=False)``.

Cases (``--cases``; each its own config, its calls interleaved rep by rep in one process):

- ``seed``: the README's main job, 4096 arenas of the seed's logistic payload (2
  conservative + 2 aggressive players, 30 turns; every arena collapses by turn ~20);
- ``governed``: the same with talk, 2 pacts and a graduated sanction ladder (the
  governance layers' records and frames);
- ``alive``: B = 16384, T = 30 of bench/throughput.py's config (threshold 0, regenRate
  0.5: arenas kept alive, so every turn is a row).

Timed calls per case: ``no_history`` (``simulate(history=False)``), ``history``
(``simulate(history=True)``: the run and its records; the frames are built on first
access), ``history_frames`` (the same, then ``Results.turns`` and ``Results.players``
built) and ``program`` (the history run's compiled program alone,
``compiled_whole_history``). Each rep times every call once, wall and process CPU; the
figures are the median, quartiles, min and max over ``--reps`` reps, and the per-rep ratio
to ``no_history`` (paired: same load), in wall time and in process CPU time (CPU time counts
what this process ran, not the time it waited for a core another process held). Each case
is printed and written as one JSON line.

    python bench/history.py [--cases seed,governed,alive] [--arenas 4096] [--reps 30] [--json FILE]
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from harness import Figures, interleaved, parser, setup, spread

setup()

import jax  # noqa: E402
import numpy as np  # noqa: E402
from throughput import config as alive_config  # noqa: E402

import bdpd_jax  # noqa: E402
from bdpd_jax import lab  # noqa: E402

# talk, two pacts of all four players and a graduated ladder (bench/governance.py's layers)
GOVERNANCE = {
    "pacts": [
        {"parties": [0, 1, 2, 3], "terms": {"type": "harvest_cap", "maxHarvest": 2.5}},
        {"parties": [0, 1, 2, 3], "terms": {"type": "no_aggression", "tolerance": 0.2}},
    ],
    "perturbations": [
        {
            "id": "g",
            "type": "sanction_graduated",
            "trigger": {"kind": "pact_violation"},
            "payload": {"ladder": [1, 3, 10]},
        }
    ],
}
TALK = [
    {"announce": "honest", "comply": True},
    {"announce": "honest", "accept": "min_cap", "acceptMinCap": 1.0},
    {"announce": "biased", "bias": 0.3},
    {"announce": "honest"},
]


def case_config(name: str) -> tuple[Any, int]:
    """(config, turns) of a case."""
    if name == "alive":
        return alive_config(30), 30
    d = bdpd_jax.default_config().model_dump(by_alias=True)
    if name == "governed":
        d.update(copy.deepcopy(GOVERNANCE))
        for p, talk in zip(d["players"], TALK, strict=True):
            p["talk"] = talk
    cfg = bdpd_jax.ArenaConfig.model_validate(d)
    return cfg, int(cfg.model.max_turns)


def calls(cfg: Any, b: int, turns: int) -> dict:
    """The four timed calls of one config (each returns once its work is done)."""
    run = functools.partial(bdpd_jax.simulate, cfg, n_arenas=b, progress=False)

    def frames() -> None:
        res = run(history=True)
        assert len(res.turns) == int(res.summary.turns_played.sum())
        assert len(res.players) == 4 * len(res.turns)

    prep = lab.prepare(cfg)
    params = prep.params_for(turns)
    program = lab.compiled_whole_history(prep.game, turns, 1)
    words = lab.key_words(0, np.arange(b))
    my = np.asarray(prep.max_yield, np.float32)
    return {
        "no_history": functools.partial(run, history=False),
        "history": functools.partial(run, history=True),
        "history_frames": frames,
        "program": lambda: jax.block_until_ready(program(*words, params, my)),
    }


def main(argv: list[str] | None = None) -> None:
    ap = parser(__doc__)
    ap.add_argument("--cases", default="seed,governed", help="comma-separated: seed, governed, alive")
    ap.add_argument("--arenas", type=int, default=4096, help="arenas of the seed and governed cases")
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args(argv)
    out = Figures("history", a.json)
    for name in a.cases.split(","):
        cfg, turns = case_config(name)
        b = 16384 if name == "alive" else a.arenas
        fs = calls(cfg, b, turns)
        for f in fs.values():
            f()  # compile and warm up
        got = interleaved(fs, a.reps)
        figures: dict[str, Any] = {"arenas": b, "turns": turns, "reps": a.reps}
        print(f"{name}: B = {b}, T = {turns}, {a.reps} interleaved reps (ms: median [q1, q3] min-max; cpu median)")
        base = np.asarray(got["no_history"]["wall"])
        base_cpu = np.asarray(got["no_history"]["cpu"])
        for k, v in got.items():
            w, c = spread([x * 1e3 for x in v["wall"]]), spread([x * 1e3 for x in v["cpu"]])
            ratio = spread(list(np.asarray(v["wall"]) / base))
            cpu_paired = spread(list(np.asarray(v["cpu"]) / base_cpu))
            cpu_ratio = c["median"] / float(np.median(base_cpu * 1e3))  # of the medians
            print(
                f"  {k:>15}: {w['median']:7.2f} [{w['q1']:.2f}, {w['q3']:.2f}] {w['min']:.2f}-{w['max']:.2f}"
                f"  cpu {c['median']:7.2f}  x no_history: median {ratio['median']:.2f}"
                f" [{ratio['q1']:.2f}, {ratio['q3']:.2f}], cpu {cpu_paired['median']:.2f}"
                f" [{cpu_paired['q1']:.2f}, {cpu_paired['q3']:.2f}]"
            )
            figures[f"{k}_ms"] = {q: round(x, 2) for q, x in w.items()}
            figures[f"{k}_cpu_ms"] = {q: round(x, 2) for q, x in c.items()}
            figures[f"{k}_over_no_history"] = {q: round(x, 3) for q, x in ratio.items()}
            figures[f"{k}_cpu_over_no_history"] = round(cpu_ratio, 3)
            figures[f"{k}_cpu_paired_over_no_history"] = {q: round(x, 3) for q, x in cpu_paired.items()}
        r, rc = figures["history_over_no_history"], figures["history_cpu_paired_over_no_history"]
        print(
            f"  history / no_history, paired reps: wall median {r['median']:.2f} q3 {r['q3']:.2f},"
            f" CPU median {rc['median']:.2f} q3 {rc['q3']:.2f} (target <= 2)"
        )
        out.emit(name, **figures)


if __name__ == "__main__":
    main()
