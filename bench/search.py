"""Search benchmark: a generation of ``bdpd_jax.search`` against ``simulate`` of the same arenas.

    .venv/bin/python bench/search.py                                  # population 64, replicates 32 and 256
    .venv/bin/python bench/search.py --population 16 --replicates 8 --host-generations 1   # smoke

CMA-ES (evosax) on two parameters of the seed's payload (``model.regenRate``,
``players[2].intensity``; 30 turns), survival >= 0.9, one process. Per replicate count R:

- device loop: warm searches (best of 3) of G and 2G generations (G = the device loop's block, so both run
  the one compiled block program), confirmation off; their difference / G is the steady time
  per generation;
- host loop (``loop="host"``): the same with 1 and 1 + H generations;
- ``simulate`` of population x R arenas (no history) of the found rule's config (they live the
  30 turns, as the candidates near the constraint do), warm, best of 3;
- a warm whole call (G generations, confirmation on): candidate evaluations per second, and
  how many programs it lowered (compiled or loaded: 0 expected);
- the EMA workbench (bench-only, when installed): ``perform_experiments`` over the same space,
  one ``simulate`` of R arenas per evaluation, evaluations per second.

Targets (issue 39): steady device generation <= 3x simulate at 2,048 arenas and <= 1.5x at
16,384. Figures: bench/README.md, "Search".
"""

from __future__ import annotations

import time

from harness import Figures, parser, setup

SPACE = {"model.regenRate": (0.01, 0.6), "players[2].intensity": (0.1, 0.9)}
LOWERING = "/jax/core/compile/jaxpr_to_mlir_module_duration"


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def best3(fn) -> float:
    """The least of three warm calls' seconds (the machine's other load adds, never subtracts)."""
    return min(timed(fn) for _ in range(3))


def ema_rate(found, replicates: int, n: int) -> float | None:
    """Evaluations per second of the EMA workbench sampling the same space, each evaluation
    one ``simulate`` of ``replicates`` arenas; None when it is not installed."""
    try:
        from ema_workbench import Model, RealParameter, ScalarOutcome, perform_experiments
    except ImportError:
        return None
    import bdpd_jax

    names = list(SPACE)

    def survived(r: float, i: float) -> dict:
        c = found.config_at(dict(zip(names, [r, i], strict=True)))  # (a search's results: the config at a point)
        res = bdpd_jax.simulate(c, n_arenas=replicates, seed=0, history=False)
        return {"survived": float(res.summary["survived"].mean())}

    model = Model("bdpd", function=survived)
    model.uncertainties = [RealParameter("r", *SPACE[names[0]]), RealParameter("i", *SPACE[names[1]])]
    model.outcomes = [ScalarOutcome("survived")]
    perform_experiments(model, scenarios=4)  # warm: simulate's program compiled
    return n / timed(lambda: perform_experiments(model, scenarios=n))


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--population", type=int, default=64)
    ap.add_argument("--replicates", type=int, nargs="+", default=[32, 256])
    ap.add_argument("--host-generations", type=int, default=3)
    ap.add_argument("--ema", type=int, default=128, help="EMA workbench evaluations (when installed)")
    a = ap.parse_args()
    setup(compile_cache=False)
    import bdpd_jax
    from bdpd_jax.searches.device import DEVICE_BLOCK

    cfg = bdpd_jax.default_config().model_dump()
    out = Figures("search", a.json)
    for r in a.replicates:
        case(out, cfg, a.population, r, DEVICE_BLOCK, a.host_generations, a.ema)


def case(out, cfg, P: int, R: int, G: int, H: int, n_ema: int) -> None:
    """One population x replicates: the figures listed in the module's docstring."""
    import jax

    import bdpd_jax

    kw = dict(constraints={"survived_mean": (">=", 0.9)}, population=P, replicates=R, seed=0, progress=False)

    def run(gens: int, **more):
        return bdpd_jax.search(cfg, SPACE, ("model.regenRate", "min"), generations=gens, **{**kw, **more})

    t0 = time.perf_counter()
    found = run(G)  # imports, the block program, the confirmation's sweep
    cold = time.perf_counter() - t0
    # the baseline: the found rule's config (its arenas live the 30 turns, as most candidates'
    # near the constraint do; the seed's payload collapses within a few turns and simulate stops)
    at = found.config_at(found.best)

    def sim() -> None:
        bdpd_jax.simulate(at, n_arenas=P * R, seed=0, history=False)

    run(2 * G, confirm=0)
    dev = (best3(lambda: run(2 * G, confirm=0)) - best3(lambda: run(G, confirm=0))) / G
    run(1 + H, loop="host", confirm=0)
    host = (best3(lambda: run(1 + H, loop="host", confirm=0)) - best3(lambda: run(1, loop="host", confirm=0))) / H
    sim()
    t_sim = best3(sim)
    made: list[str] = []

    def listen(event: str, duration: float, **_: object) -> None:
        if event == LOWERING:
            made.append(event)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        whole = timed(lambda: run(G))
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    ema = ema_rate(found, R, n_ema)
    print(
        f"population {P} x replicates {R} = {P * R:,} arenas/generation, 30 turns: simulate {t_sim * 1e3:.1f} ms; "
        f"steady generation: device loop {dev * 1e3:.1f} ms ({dev / t_sim:.2f}x simulate), host loop "
        f"{host * 1e3:.1f} ms ({host / t_sim:.2f}x); warm whole call of {G} generations + confirmation "
        f"{whole:.2f} s = {P * G / whole:,.0f} candidate evaluations/s, {len(made)} programs lowered; "
        f"cold first call {cold:.1f} s; EMA workbench: "
        + (f"{ema:,.0f} evaluations/s" if ema is not None else "not installed")
    )
    out.emit(
        f"P{P}_R{R}",
        population=P,
        replicates=R,
        arenas=P * R,
        simulate_ms=t_sim * 1e3,
        device_ms_per_generation=dev * 1e3,
        device_over_simulate=dev / t_sim,
        host_ms_per_generation=host * 1e3,
        host_over_simulate=host / t_sim,
        warm_call_s=whole,
        warm_call_evaluations_per_s=P * G / whole,
        warm_call_programs_lowered=len(made),
        cold_s=cold,
        ema_evaluations_per_s=ema,
    )


if __name__ == "__main__":
    main()
