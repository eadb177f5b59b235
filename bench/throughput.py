"""Throughput of the batched logistic game against plain Python and numpy, in one run.

Prints player-turns/s and arena-turns/s for several batch sizes and turn counts (histories
off, 4 players: 2 conservative + 2 aggressive, exact Gaussian noise on commonsStock), the
compile time apart from the run time, and the same game through (a) the plain-Python
reference of tests/reference.py and (b) a numpy version vectorized over arenas.

    python bench/throughput.py                 # full table
    python bench/throughput.py --quick         # B in (1, 1024, 16384), T = 30
    XLA_FLAGS= python bench/throughput.py --quick   # XLA's default CPU fusions (YNNPACK on)
    python bench/throughput.py --players 4 16 64 256 1024 [--slots 16 128]   # bench/players.py
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bdpd_jax._env import apply_env  # noqa: E402

apply_env()

import jax  # noqa: E402

from bdpd_jax._env import enable_compile_cache  # noqa: E402

enable_compile_cache()
import numpy as np  # noqa: E402

import bdpd_jax  # noqa: E402
from bdpd_jax.build import broadcast_batch, build  # noqa: E402
from bdpd_jax.simulate import arena_keys, compiled_init, compiled_run  # noqa: E402


def config(turns: int) -> bdpd_jax.ArenaConfig:
    d = bdpd_jax.default_config().model_dump()
    d["model"]["maxTurns"] = turns
    d["model"]["threshold"] = 0.0  # keep arenas alive so every turn does full work
    d["model"]["regenRate"] = 0.5
    return bdpd_jax.ArenaConfig.model_validate(d)


def bench_jax(b: int, turns: int, generator: str = "hash", reps: int = 3) -> tuple[float, float]:
    """(compile seconds, best run seconds) of `turns` turns of b arenas, histories off."""
    game, params = build(config(turns), generator=generator)
    pb = broadcast_batch(params, b)
    keys = arena_keys(0, np.arange(b))
    init = compiled_init(game)
    run = compiled_run(game, turns, False)
    st = jax.block_until_ready(init(keys, pb))
    t0 = time.perf_counter()
    exe = run.lower(keys, st, pb).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(exe(keys, st, pb))  # warm-up run, not timed
    best = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(exe(keys, st, pb))
        best = min(best, time.perf_counter() - t0)
    return compile_s, best


def bench_noise_floor(b: int, turns: int, reps: int = 5) -> float:
    """Seconds for the game's exact Gaussian draws alone (4 a turn per arena: commonsStock
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
    best = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(run(keys))
        best = min(best, time.perf_counter() - t0)
    return best


def bench_python(arenas: int, turns: int) -> float:
    """Seconds for `arenas` x `turns` of the plain-Python reference (tests/reference.py)."""
    from reference import RefArena

    cfg = config(turns)
    model = cfg.model.model_dump()
    model["collapseDie"] = cfg.model.collapseDie.model_dump()
    obs = {k: v.model_dump() for k, v in cfg.observability.items()}
    players = [p.model_dump() for p in cfg.players]
    rnd = random.Random(0)
    names = ["commonsStock", "regenRate", "commonsCapacity", "threshold", "commonsRatio", "capitalStock",
             "pollutionLevel", "nPlayers", "turn", "myWealth", "myCapacity"]
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


def main() -> None:
    if "--players" in sys.argv or "--slots" in sys.argv:  # the N / pact-slot sweep: bench/players.py
        import players

        return players.main(sys.argv[1:])
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", type=int, nargs="*")
    args = ap.parse_args()
    sizes = args.sizes or ([1, 1024, 16384] if args.quick else [1, 1024, 16384, 131072])
    turn_list = [30] if args.quick else [30, 3000]
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, XLA_FLAGS={os.environ.get('XLA_FLAGS')!r}")
    print(f"{'B':>7} {'T':>5} {'compile s':>9} {'run s':>9} {'arena-turns/s':>14} {'player-turns/s':>15}")
    rates = {}
    for t in turn_list:
        for b in sizes:
            if b * t > 131072 * 3000 // 4 and args.quick:
                continue
            c, s = bench_jax(b, t, reps=3 if b * t <= 50_000_000 else 1)
            rates[(b, t)] = b * t / s
            print(f"{b:>7} {t:>5} {c:>9.2f} {s:>9.4f} {b * t / s:>14.3e} {4 * b * t / s:>15.3e}")
    b, t = 16384, 30
    py_arenas = 200
    py = py_arenas * t / bench_python(py_arenas, t)
    npy = b * t / bench_numpy(b, t)
    jx = rates.get((b, t)) or b * t / bench_jax(b, t)[1]
    print(f"\nB={b}, T={t}, histories off, 4 players:")
    print(f"  plain Python reference: {py:.3e} arena-turns/s  -> jax is {jx / py:,.0f}x (target >= 300x)")
    print(f"  numpy vectorized:       {npy:.3e} arena-turns/s  -> jax is {jx / npy:,.1f}x (target >= 15x)")
    fl = b * t / bench_noise_floor(b, t)
    print(f"  noise draws alone:      {fl:.3e} arena-turns/s  -> the most any turn could be is {fl / npy:,.1f}x numpy")
    tf = b * t / bench_jax(b, t, generator="threefry")[1]
    print(f"  generator: hash {jx:.3e} vs threefry {tf:.3e} arena-turns/s ({jx / tf:.2f}x)")


if __name__ == "__main__":
    main()
