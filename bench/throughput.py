"""Throughput of the batched logistic game against its peers, in one run.

Prints player-turns/s, arena-turns/s and *played* arena-turns/s (turns before each arena
ended; the rest are frozen no-ops) for several batch sizes and turn counts (histories off,
4 players: 2 conservative + 2 aggressive, exact Gaussian noise on commonsStock), the compile
time apart from the run time, and in the same run:

- ``simulate`` (the public call) against the compiled kernel at B = 16384, T = 30, with
  and without history frames (interleaved runs, best of each);
- skipping ended arenas: the seed payload at T = 3000, B = 16384 against the full scan (the
  behaviour before skipping); a sweep where half the arenas end by turn ~25 against one
  where none end (T = 3000);
- the same game through the plain-Python reference (tests/reference.py), a numpy version
  vectorized over arenas, the numpy loop written plainly in jax.numpy, a numba loop parallel
  over arenas (bench/numba_baseline.py, the same noise bits; needs the ``bench`` extra), and
  the noise draws alone (the floor). bench/xla_ladder.py goes further: the game hand-written
  for XLA, duty by duty, against the same floor and numba.

    python bench/throughput.py                 # full table
    python bench/throughput.py --quick         # B in (1, 1024, 16384), T = 30
    python bench/throughput.py --quick --json figures.jsonl   # and the figures as JSON lines
    XLA_FLAGS= python bench/throughput.py --quick   # XLA's default CPU fusions (YNNPACK on)
    python bench/throughput.py --players 4 16 64 256 1024 [--slots 16 128]   # bench/players.py
"""

from __future__ import annotations

import math
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Figures, best_of, compile_seconds, parser, setup  # noqa: E402

setup()  # bdpd_jax.configure(compile_cache=True), before jax runs anything

import jax  # noqa: E402
import numpy as np  # noqa: E402

import bdpd_jax  # noqa: E402
from bdpd_jax import lab  # noqa: E402

PLAYED: dict[tuple[int, int], int] = {}


def config(turns: int, noisy: bool = True) -> bdpd_jax.ArenaConfig:
    d = bdpd_jax.default_config().model_dump()
    if not noisy:  # exact readings: no draw at all for the observations
        d["observability"] = {
            k: {kk: vv for kk, vv in v.items() if kk != "noise"} for k, v in d["observability"].items()
        }
    d["model"]["maxTurns"] = turns
    d["model"]["threshold"] = 0.0  # keep arenas alive so every turn does full work
    d["model"]["regenRate"] = 0.5
    return bdpd_jax.ArenaConfig.model_validate(d)


def jax_runner(b: int, turns: int, generator: str = "hash", noisy: bool = True):
    """(compile seconds, a call running `turns` turns of b arenas, histories off).
    PLAYED[(b, turns)] gets the arena-turns played (before each arena ended)."""
    prep = bdpd_jax.lab.prepare(config(turns, noisy), generator=generator)
    pb = lab.batch_params(prep, b)
    keys = lab.arena_keys(0, np.arange(b))
    init = lab.compiled_init(prep.game)
    run = lab.compiled_run(prep.game, turns, False, 1, True)  # as run_batch on one device: stops when all ended
    st = jax.block_until_ready(init(keys, pb))
    compile_s, exe = compile_seconds(run, keys, st, pb)
    final, _ = jax.block_until_ready(exe(keys, st, pb))  # warm-up run, not timed
    PLAYED[(b, turns)] = int(np.asarray(final.turn).sum())
    return compile_s, lambda: jax.block_until_ready(exe(keys, st, pb))


def bench_jax(b: int, turns: int, generator: str = "hash", reps: int = 3, noisy: bool = True) -> tuple[float, float]:
    """(compile seconds, best run seconds) of `turns` turns of b arenas, histories off."""
    compile_s, run = jax_runner(b, turns, generator, noisy)
    return compile_s, best_of({"run": run}, reps)["run"]


def noise_floor_runner(b: int, turns: int):
    """A call doing the game's exact Gaussian draws alone (4 a turn per arena: commonsStock
    for each player), in a scan like the game's: a floor no turn of this game can beat."""
    import jax.numpy as jnp

    from bdpd_jax.kernels import rng

    keys = jax.vmap(lambda a: rng.arena_key(0, a))(jnp.arange(b))
    purpose = rng.obs_purpose(0)

    @jax.jit
    def run(keys):
        def body(acc, t):
            z = sum(jax.vmap(lambda k, p=p: rng.normal(k, t, p, purpose))(keys) for p in range(4))
            return acc + z, None

        return jax.lax.scan(body, jnp.zeros((b,)), jnp.arange(1, turns + 1))[0]

    jax.block_until_ready(run(keys))
    return lambda: jax.block_until_ready(run(keys))


def plain_jax_runner(b: int, turns: int):
    """A call running bench_numpy's loop written plainly in jax.numpy (players as [4, B]
    rows, the kernel's counter-hash draws: 4 observation normals and the die's uniform a
    turn), jitted as one scan: what a JAX user writes without the kernel's layout work."""
    import jax.numpy as jnp

    from bdpd_jax.kernels import rng

    keys = jax.vmap(lambda a: rng.arena_key(0, a))(jnp.arange(b))
    purpose = rng.obs_purpose(0)
    f = jnp.float32
    r, k, thr, p = f(0.5), f(150.0), f(0.0), f(4 / 6)

    @jax.jit
    def run(keys):
        def body(c, t):
            stock, reserve, wealth, alive = c
            z = jnp.stack([jax.vmap(lambda kk, pp=pp: rng.normal(kk, t, pp, purpose))(keys) for pp in range(4)])
            seen = jnp.maximum(stock + f(0.05) * stock * z, 0)
            cap = 1 + f(0.05) * wealth
            rho = seen[:2] / k
            cons = cap[:2] * jnp.where(rho > 0.6, f(0.6), jnp.where(rho > 0.4, f(0.35), f(0.1)))
            req = jnp.concatenate([cons, jnp.minimum(cap[2:], f(0.5) * seen[2:])]) * alive
            demand = req.sum(0)
            from_stock = jnp.minimum(demand, stock)
            need = jnp.minimum(demand - from_stock, reserve)
            u = jax.vmap(lambda kk: rng.uniform(kk, t, 0, rng.DIE, (), "hash"))(keys)
            kk = jnp.floor(jnp.log(u) / jnp.log(p))
            died = kk < jnp.ceil(need)
            drawn = jnp.where(died, kk, need)
            frac = jnp.where(demand > 0, jnp.minimum((from_stock + drawn) / jnp.maximum(demand, 1e-30), 1), 0)
            stock = stock - from_stock
            dead = died | (stock < thr)
            stock = jnp.where(dead, stock, jnp.maximum(stock + r * stock * (1 - stock / k), 0))
            return (stock, reserve - drawn, wealth + req * frac, alive & ~dead), None

        c0 = (jnp.full(b, 150.0, f), jnp.full(b, 20.0, f), jnp.full((4, b), 30.0, f), jnp.ones(b, bool))
        return jax.lax.scan(body, c0, jnp.arange(1, turns + 1))[0]

    jax.block_until_ready(run(keys))
    return lambda: jax.block_until_ready(run(keys))


def bench_python(arenas: int, turns: int) -> float:
    """Seconds for `arenas` x `turns` of the plain-Python reference (tests/reference.py)."""
    from reference import ENV, RefArena

    cfg = config(turns)
    model = cfg.model.model_dump()
    model["collapseDie"] = cfg.model.engine.collapse_die.model_dump()
    obs = {k: v.model_dump() for k, v in cfg.observability.items()}
    players = [p.model_dump() for p in cfg.players]
    rnd = random.Random(0)
    names = [*ENV, "myWealth", "myCapacity"]  # the reference's scalar observation variables
    t0 = time.perf_counter()
    for _ in range(arenas):
        ref = RefArena(model, obs, players)
        n = ref.n
        while not ref.over:
            reqs = []
            for i in range(n):
                z = {k: rnd.gauss(0, 1) for k in names}
                z["othersWealth"] = [rnd.gauss(0, 1) for _ in range(n)]
                z["othersHarvest"] = [rnd.gauss(0, 1) for _ in range(n)]
                reqs.append(ref.decide(i, ref.observe(i, z), rnd.random()))
            u = rnd.random()
            ref.step(reqs, math.floor(math.log(u) / math.log(4 / 6)))
    return time.perf_counter() - t0


def bench_numpy(b: int, turns: int) -> float:
    """Seconds for the same game vectorized over arenas in numpy (float32, same rules)."""
    rng = np.random.default_rng(0)
    f = np.float32
    r, k, thr, p = f(0.5), f(150.0), f(0.0), f(4 / 6)
    t0 = time.perf_counter()
    stock = np.full(b, 150.0, f)
    reserve = np.full(b, 20.0, f)
    wealth = np.full((4, b), 30.0, f)
    alive = np.ones(b, bool)
    for _ in range(turns):
        z = rng.standard_normal((4, b), dtype=f)  # the draws the game reads: commonsStock x 4
        seen = np.maximum(stock + f(0.05) * stock * z, 0)
        cap = 1 + f(0.05) * wealth
        rho = seen[:2] / k
        cons = cap[:2] * np.where(rho > 0.6, f(0.6), np.where(rho > 0.4, f(0.35), f(0.1)))
        aggr = np.minimum(cap[2:], f(0.5) * seen[2:])
        req = np.concatenate([cons, aggr]) * alive
        demand = req.sum(0)
        from_stock = np.minimum(demand, stock)
        excess = demand - from_stock
        need = np.minimum(excess, reserve)
        kk = np.floor(np.log(rng.random(b, dtype=f)) / np.log(p))
        died = kk < np.ceil(need)
        drawn = np.where(died, kk, need)
        reserve -= drawn
        frac = np.where(demand > 0, np.minimum((from_stock + drawn) / np.maximum(demand, 1e-30), 1), 0)
        wealth += req * frac
        stock = stock - from_stock
        dead = died | (stock < thr)
        stock = np.where(dead, stock, np.maximum(stock + r * stock * (1 - stock / k), 0))
        alive &= ~dead
    return time.perf_counter() - t0


def bench_simulate(b: int, turns: int, reps: int = 7) -> dict:
    """Best seconds of the compiled kernel, of ``simulate`` and of a sweep of the same game
    (``run_points``: 16 values of regenRate x b/16 replicates; history off; interleaved so
    each sees the same machine load), of that sweep with its arena frame read, of the
    sweep's parts (plan lookup; arena rows: one chunk's run and columns; per-point
    aggregation) and of ``simulate`` with history."""
    import functools

    import pandas as pd

    from bdpd_jax.sweeps.results import aggregate
    from bdpd_jax.sweeps.sweep import RunOptions, cached_plan, run_points

    cfg = config(turns)
    prep = bdpd_jax.lab.prepare(cfg)
    pb = lab.batch_params(prep, b)
    keys = lab.arena_keys(0, np.arange(b))
    st = lab.compiled_init(prep.game)(keys, pb)
    _, exe = compile_seconds(lab.compiled_run(prep.game, turns, False, 1, True), keys, st, pb)
    calls = {
        "kernel": lambda: jax.block_until_ready(exe(keys, st, pb)),
        "simulate": functools.partial(bdpd_jax.simulate, cfg, n_arenas=b, history=False, progress=False),
        "simulate_history": functools.partial(bdpd_jax.simulate, cfg, n_arenas=b, history=True, progress=False),
        "sweep": functools.partial(
            run_points,
            cfg.model_dump(),
            pd.DataFrame({"model.regenRate": np.linspace(0.3, 0.7, 16)}),
            RunOptions(replicates=b // 16, turns=turns, progress=False),
        ),
    }
    # the sweep with its arena rows read as a frame (built on that first read: the sweep
    # itself aggregates the points from the columns)
    calls["sweep_frame"] = lambda: calls["sweep"]().arenas
    # where a sweep's time goes beyond the kernel: its plan lookup, its one chunk's arena rows
    # (keys, init, the turns, final numbers, the per-arena columns) and the per-point aggregation
    table = pd.DataFrame({"model.regenRate": np.linspace(0.3, 0.7, 16)})
    plan = cached_plan(bdpd_jax.lab.prepare(cfg.model_dump()), table, RunOptions(replicates=b // 16, turns=turns))
    rows = plan.chunk_columns(0)
    calls["sweep_plan"] = lambda: cached_plan(
        bdpd_jax.lab.prepare(cfg.model_dump()), table, RunOptions(replicates=b // 16, turns=turns)
    )
    calls["sweep_rows"] = lambda: plan.chunk_columns(0)
    calls["sweep_points"] = lambda: aggregate(rows, plan.names, plan.outcomes())
    for f in calls.values():
        f()  # compile and warm up
    # the run with history frees ~0.5 GB of frames: timed apart, so the kernel runs after it
    # do not pay for that in the share
    timed = ("kernel", "simulate", "sweep", "sweep_frame", "sweep_plan", "sweep_rows", "sweep_points")
    best = best_of({k: calls[k] for k in timed}, reps)
    return best | {"simulate_history": best_of({"h": calls["simulate_history"]}, 3)["h"]}


def seed_payload(turns: int) -> dict:
    d = bdpd_jax.default_config().model_dump()
    d["model"]["maxTurns"] = turns
    return d


def bench_skip_seed(b: int = 16384, turns: int = 3000) -> dict:
    """The seed payload (every arena collapses by turn ~25) for ``turns`` turns: a rollout
    (``bdpd_jax.lab``, the runner ``simulate`` uses) with skipping, against the full scan of
    every turn (chunks of 1000 turns, no skipping: the run before skipping). Same final
    states checked."""
    import functools

    prep = bdpd_jax.lab.prepare(seed_payload(turns))
    out = {}
    for name, skip, chunk in (("skip", True, None), ("full", False, 1000)):
        run = functools.partial(lab.rollout, prep, b, skip=skip, chunk_turns=chunk)
        run()
        best = math.inf
        for _ in range(2 if skip else 1):
            t0 = time.perf_counter()
            res = run()
            final = lab.to_numpy((res.state.turn, res.state.wealth, res.state.collapsed))
            best = min(best, time.perf_counter() - t0)
        out[name] = (best, final)
    for a, c in zip(out["skip"][1], out["full"][1], strict=True):
        np.testing.assert_array_equal(a, c)
    return {k: v[0] for k, v in out.items()} | {"played": int(out["skip"][1][0].sum())}


def bench_skip_mixed(b: int = 16384, turns: int = 3000) -> dict:
    """A sweep of 4 aggressive players: half the arenas at intensity 0.5 (they end by turn
    ~25), half at 0.001 (they never end), against all at 0.001. Seconds, best of 3 each
    (interleaved), and each one's first run (which compiles its programs: the narrower,
    laned one for the mixed run)."""
    import pandas as pd

    from bdpd_jax.sweeps.sweep import RunOptions, run_points

    cfg = seed_payload(turns)
    cfg["players"] = [{"strategy": "aggressive", "intensity": 0.5, "privateResource": 30} for _ in range(4)]
    cols = [f"players[{i}].intensity" for i in range(4)]
    tables = {
        "mixed": pd.DataFrame({c: [0.001, 0.5] for c in cols}),
        "none_end": pd.DataFrame({c: [0.001, 0.001] for c in cols}),
    }
    runs = {
        name: (lambda tab=tab: run_points(cfg, tab, RunOptions(replicates=b // 2, turns=turns, progress=False)))
        for name, tab in tables.items()
    }
    out = {}
    for name, run in runs.items():  # compile, warm up, count
        t0 = time.perf_counter()
        r = run()
        out[name + "_first"] = time.perf_counter() - t0
        out[name + "_played"] = int(r.arenas.survival_time.sum())
        out[name + "_ended_by_100"] = float((r.arenas.survival_time <= 100).mean())
    return out | best_of(runs, 3)


def numba_runner(b: int, turns: int):
    """(compile + first run seconds, a call, share of arenas whose final wealth and turns
    equal the kernel's bit for bit), or None without numba."""
    try:
        import numba_baseline
    except ImportError:
        return None
    if numba_baseline.numba is None:
        return None
    t0 = time.perf_counter()
    wealth, played = numba_baseline.run(b, turns)
    first = time.perf_counter() - t0
    res = bdpd_jax.simulate(config(turns), n_arenas=b, history=False, progress=False)
    kw = res.summary[[f"wealth_{i}" for i in range(4)]].to_numpy()
    same = float(((kw == wealth).all(axis=1) & (res.summary.turns_played.to_numpy() == played)).mean())
    return first, lambda: numba_baseline.run(b, turns), same


def main() -> None:
    if "--players" in sys.argv or "--slots" in sys.argv:  # the N / pact-slot sweep: bench/players.py
        import players

        return players.main(sys.argv[1:])
    ap = parser(__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", type=int, nargs="*")
    ap.add_argument("--no-skip", action="store_true", help="leave out the T = 3000 skipping runs")
    args = ap.parse_args()
    out = Figures("throughput", args.json)
    sizes = args.sizes or ([1, 1024, 16384] if args.quick else [1, 1024, 16384, 131072])
    turn_list = [30] if args.quick else [30, 3000]
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, XLA_FLAGS={os.environ.get('XLA_FLAGS')!r}")
    print(
        f"{'B':>7} {'T':>5} {'compile s':>9} {'run s':>9} {'arena-turns/s':>14} {'played/s':>10} {'player-turns/s':>15}"
    )
    rates = {}
    for t in turn_list:
        for b in sizes:
            if b * t > 131072 * 3000 // 4 and args.quick:
                continue
            c, s = bench_jax(b, t, reps=3 if b * t <= 50_000_000 else 1)
            rates[(b, t)] = b * t / s
            out.emit(
                "kernel",
                arenas=b,
                turns=t,
                compile_s=c,
                run_s=s,
                arena_turns_per_s=b * t / s,
                played_per_s=PLAYED[(b, t)] / s,
            )
            print(
                f"{b:>7} {t:>5} {c:>9.2f} {s:>9.4f} {b * t / s:>14.3e} {PLAYED[(b, t)] / s:>10.3e} "
                f"{4 * b * t / s:>15.3e}"
            )
    b, t = 16384, 30
    sm = bench_simulate(b, t)
    k = sm["kernel"]
    out.emit(
        "simulate",
        arenas=b,
        turns=t,
        **{f"{name}_s": v for name, v in sm.items()},  # each timed call's best seconds
        **{f"{name}_share": k / sm[name] for name in ("simulate", "sweep", "sweep_frame")},  # the kernel's share
        history_over_no_history=sm["simulate_history"] / sm["simulate"],
        target_share=0.9,
    )
    print(
        f"\nsimulate at B={b}, T={t} (kernel, simulate and a sweep interleaved, best of 7): "
        f"kernel {k * 1e3:.2f} ms ({b * t / k:.3e} arena-turns/s)"
    )
    print(
        f"  simulate(history=False): {sm['simulate'] * 1e3:.2f} ms ({b * t / sm['simulate']:.3e} arena-turns/s): "
        f"{k / sm['simulate']:.0%} of the kernel (target >= 90%)"
    )
    print(
        f"  sweep (run_points, 16 points x {b // 16} replicates): {sm['sweep'] * 1e3:.2f} ms: "
        f"{k / sm['sweep']:.0%} of the kernel (target >= 90%); with its arena rows read as a frame "
        f"{sm['sweep_frame'] * 1e3:.2f} ms ({k / sm['sweep_frame']:.0%}); its plan lookup alone "
        f"{sm['sweep_plan'] * 1e3:.2f} ms, its arena rows alone {sm['sweep_rows'] * 1e3:.2f} ms, "
        f"its per-point aggregation alone {sm['sweep_points'] * 1e3:.2f} ms"
    )
    print(
        f"  simulate(history=True):  {sm['simulate_history'] * 1e3:.2f} ms: the frames cost "
        f"{(sm['simulate_history'] - sm['simulate']) * 1e3:.2f} ms ({sm['simulate_history'] / k:.1f}x the kernel)"
    )
    if not args.no_skip:
        sk = bench_skip_seed()
        out.emit(
            "skip_seed",
            arenas=16384,
            turns=3000,
            full_s=sk["full"],
            skip_s=sk["skip"],
            speedup=sk["full"] / sk["skip"],
            played=sk["played"],
            target_speedup=20,
        )
        print("\nseed payload, B=16384, T=3000, histories off (same results checked):")
        for name in ("full", "skip"):
            print(
                f"  {name:>4}: {sk[name]:.3f} s, {16384 * 3000 / sk[name]:.3e} arena-turns/s, "
                f"{sk['played'] / sk[name]:.3e} played/s"
            )
        print(f"  skipping ended arenas: {sk['full'] / sk['skip']:.1f}x faster (target >= 20x)")
        mx = bench_skip_mixed()
        out.emit(
            "skip_mixed", arenas=16384, turns=3000, **mx, mixed_share=mx["mixed"] / mx["none_end"], target_share=0.6
        )
        print("\nsweep, B=16384, T=3000, 4 aggressive players:")
        for name in ("none_end", "mixed"):
            print(
                f"  {name:>8}: {mx[name]:.3f} s, ended by turn 100: {mx[name + '_ended_by_100']:.0%}, "
                f"{16384 * 3000 / mx[name]:.3e} arena-turns/s, {mx[name + '_played'] / mx[name]:.3e} played/s"
            )
        print(
            f"  half ended costs {mx['mixed'] / mx['none_end']:.0%} of none ended (target <= 60%); the 8192 live "
            f"arenas run in {lab.lanes_for(8192, 2900)} lane(s); "
            f"first runs (compiling): mixed {mx['mixed_first']:.2f} s, "
            f"none ended {mx['none_end_first']:.2f} s"
        )
    py_arenas = 200
    py = py_arenas * t / bench_python(py_arenas, t)
    _, kernel = jax_runner(b, t)
    _, quiet = jax_runner(b, t, noisy=False)
    calls = {
        "kernel": kernel,
        "numpy": lambda: bench_numpy(b, t),
        "floor": noise_floor_runner(b, t),
        "no_noise": quiet,
        "plain_jax": plain_jax_runner(b, t),
    }
    nb = numba_runner(b, t)
    if nb is not None:
        calls["numba"] = nb[1]
    best = best_of(calls, 5)
    rate = {k: b * t / v for k, v in best.items()}
    out.emit(
        "peers",
        arenas=b,
        turns=t,
        **{f"{k}_arena_turns_per_s": v for k, v in rate.items()},
        python_arena_turns_per_s=py,
    )
    jx = rate["kernel"]
    print(f"\nB={b}, T={t}, histories off, 4 players (peers interleaved, best of 5):")
    print(f"  kernel:                 {jx:.3e} arena-turns/s")
    print(
        f"  plain Python reference: {py:.3e} arena-turns/s  -> jax is {jx / py:,.0f}x (target >= 300x; not interleaved)"
    )
    print(
        f"  numpy vectorized:       {rate['numpy']:.3e} arena-turns/s  -> jax is {jx / rate['numpy']:,.1f}x "
        f"(target >= 15x)"
    )
    print(
        f"  plain jax.numpy loop:   {rate['plain_jax']:.3e} arena-turns/s  -> the kernel is "
        f"{jx / rate['plain_jax']:,.1f}x (the same rules written plainly, no layout work)"
    )
    if nb is None:
        print("  numba loop:             not measured (pip install -e '.[bench]')")
    else:
        print(
            f"  numba, prange over arenas: {rate['numba']:.3e} arena-turns/s  -> jax is {jx / rate['numba']:,.1f}x "
            f"(target >= 3x); compile {nb[0]:.1f} s; {nb[2]:.1%} of arenas end with the kernel's wealth "
            "and turns bit for bit"
        )
    fl = rate["floor"]
    print(
        f"  noise draws alone:      {fl:.3e} arena-turns/s  -> the kernel runs at {jx / fl:.0%} of this floor "
        f"(target >= 50%); the most any turn could be is {fl / rate['numpy']:,.1f}x numpy"
    )
    print(
        f"  the kernel without observation noise (no draw but the die's): {rate['no_noise']:.3e} "
        f"arena-turns/s: the turn's other work alone takes {fl / rate['no_noise']:.0%} of the floor's time"
    )
    print(
        "  (bench/xla_ladder.py: the same game hand-written for XLA, the kernel's duties added one by one, "
        "against this floor and numba)"
    )
    tf = b * t / bench_jax(b, t, generator="threefry")[1]
    out.emit("generator", arenas=b, turns=t, hash_arena_turns_per_s=jx, threefry_arena_turns_per_s=tf)
    print(f"  generator: hash {jx:.3e} vs threefry {tf:.3e} arena-turns/s ({jx / tf:.2f}x)")


if __name__ == "__main__":
    main()
