"""Search benchmark: candidate evaluations per second of ``bdpd_jax.search`` (CMA-ES), each
generation one batched sweep of population x replicates arenas (the seed's payload, 30 turns).

    .venv/bin/python bench/search.py                      # population 64, replicates 32
    .venv/bin/python bench/search.py --population 16 --replicates 8 --generations 3   # smoke

Two searches with the same arguments but ``--generations`` 1 and 1 + G: the first pays the
imports, the ES's and the sweep's compiles; the difference divided by G is the steady time
per generation (the optimiser's ask/tell, building each candidate's params, the batched run,
the points frame). Reported: candidates/s and arena-evaluations/s at steady state, and the
cold first generation. Figures: bench/README.md, "Search".
"""

from __future__ import annotations

import time

from harness import Figures, parser, setup


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--population", type=int, default=64)
    ap.add_argument("--replicates", type=int, default=32)
    ap.add_argument("--generations", type=int, default=5)
    a = ap.parse_args()
    setup(compile_cache=False)
    import bdpd_jax

    cfg = bdpd_jax.default_config().model_dump()
    kw = dict(
        constraints={"survived_mean": (">=", 0.9)},
        population=a.population,
        replicates=a.replicates,
        seed=0,
        progress=False,
    )
    space = {"model.regenRate": (0.01, 0.6), "players[2].intensity": (0.1, 0.9)}
    t0 = time.perf_counter()
    bdpd_jax.search(cfg, space, ("model.regenRate", "min"), generations=1, **kw)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    bdpd_jax.search(cfg, space, ("model.regenRate", "min"), generations=1, **kw)  # warm: same programs, ES again
    one = time.perf_counter() - t0
    t0 = time.perf_counter()
    bdpd_jax.search(cfg, space, ("model.regenRate", "min"), generations=1 + a.generations, **kw)
    many = time.perf_counter() - t0
    per_gen = (many - one) / a.generations
    print(
        f"population {a.population} x replicates {a.replicates} ({a.population * a.replicates} arenas/generation), "
        f"30 turns: cold first search {cold:.2f} s, warm 1-generation search {one:.2f} s, "
        f"steady {per_gen * 1e3:.1f} ms/generation = {a.population / per_gen:,.0f} candidates/s = "
        f"{a.population * a.replicates / per_gen:,.0f} arena-evaluations/s"
    )
    Figures("search", a.json).emit(
        f"P{a.population}_R{a.replicates}",
        population=a.population,
        replicates=a.replicates,
        generations=a.generations,
        cold_s=cold,
        ms_per_generation=per_gen * 1e3,
        candidates_per_s=a.population / per_gen,
        arena_evaluations_per_s=a.population * a.replicates / per_gen,
    )


if __name__ == "__main__":
    main()
