"""How fast can any XLA program of the bench game go, and what do the kernel's duties cost?

bench/throughput.py's game (4 players: 2 conservative + 2 aggressive, noisy commonsStock,
the hidden-reserve collapse die, logistic regrowth), written by hand as one scan in the
layout XLA:CPU runs best (the players as one [4, B] array, the batch minor; the kernel's
draws, the next turn's noise drawn at the end of a turn and carried, as the rollout does).
Each rung adds one duty the kernel has and the bare game lacks, cumulatively:

- ``bare``: the rules, with every number a compile-time constant;
- ``params``: every number a per-arena [B] array, as a sweep passes them;
- ``live_stacked``: requests sanitised (non-finite or negative -> 0) and masked by a
  per-arena live flag (not collapsed, turn < maxTurns); every state value kept where not
  live; the turn counter (the kernel's ``still_playing`` and ``sanitize``). The check runs
  on the stacked [4, B] requests;
- ``live``: the same, each player's request checked before the players are stacked (as
  the kernel's ``sanitize`` does for few players);
- ``live_unrolled``: the same with the players' sums written as chains of adds, as the
  kernel writes them for few players (kernels/unroll.py), instead of a reduction;
- ``fit``: the rationing's second pass, scaling the parts back under what was delivered
  (kernels/schedule.py ``ration``: the parts never sum above it);
- ``last_actual``: the turn's served harvest carried as a [4, B] output (``last_actual``).

Interleaved in one process with the kernel, the noise draws alone (the floor) and the
numba loop (when the ``bench`` extra is installed), each rung gets µs per turn, its share of
the floor and its ratio to numba: where issue 16's targets (kernel >= 50 % of the floor,
>= 3x numba) are reachable and which duty moves a program out of reach.

    python bench/xla_ladder.py                      # B = 16384, T = 30, best of 5, 3 rounds
    python bench/xla_ladder.py --profile live fit   # XLA:CPU's per-op times of those rungs
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Figures, parser, setup  # noqa: E402

RUNGS = ("bare", "params", "live_stacked", "live", "live_unrolled", "fit", "last_actual")


def duties_of(rung: str) -> set[str]:
    """The duties a rung carries, cumulative: each rung is the one before plus one duty
    (``live`` moves ``live_stacked``'s check to each player's request)."""
    order = ["params", "live", "at_source", "unrolled", "fit", "last_actual"]
    return set(order[: RUNGS.index(rung)])


def ladder_runner(rung: str, b: int, turns: int):
    """A call running ``turns`` turns of b arenas of the hand-fused game at one rung; and its
    final per-player wealth float[4, B] (for the check against the kernel)."""
    import jax
    import jax.numpy as jnp

    from bdpd_jax.kernels import rng

    duties = duties_of(rung)
    f = jnp.float32
    keys = jax.vmap(lambda a: rng.arena_key(0, a))(jnp.arange(b))
    purpose = rng.obs_purpose(0)
    players = jnp.arange(4)
    numbers = {
        "regen": 0.5,
        "capacity": 150.0,
        "threshold": 0.0,
        "noise": 0.05,
        "intensity": 0.5,
        "p_die": 4 / 6,
        "max_turns": turns,
    }

    def draws(t):  # [4, B]: the kernel's observation noise of commonsStock, player by player
        return jax.vmap(lambda k: jax.vmap(lambda p: rng.normal(k, t, p, purpose))(players), out_axes=1)(keys)

    def sanitized(x):
        return jnp.where(~jnp.isfinite(x) | (x < 0), f(0), x)

    def add4(x):
        return (x[0] + x[1]) + (x[2] + x[3]) if "unrolled" in duties else x.sum(0)

    def turn(c, t, P):
        stock, reserve, wealth, ended, z, n_played, last = c
        seen = jnp.maximum(stock + P["noise"] * jnp.abs(stock) * z, 0)
        cap = 1 + f(0.05) * wealth
        rho = seen[:2] / P["capacity"]
        cons = cap[:2] * jnp.where(rho > 0.6, f(0.6), jnp.where(rho > 0.4, f(0.35), f(0.1)))
        parts = [cons, jnp.minimum(cap[2:], P["intensity"] * seen[2:])]
        live = ~ended
        if "at_source" in duties:
            parts = [sanitized(x) for x in parts]
        req = jnp.concatenate(parts)
        if "live" in duties:
            live = live & (n_played < P["max_turns"])
            req = req if "at_source" in duties else sanitized(req)
        req = jnp.where(live, req, f(0))
        total = add4(req)
        from_stock = jnp.minimum(total, stock)
        need = jnp.maximum(jnp.minimum(total - from_stock, reserve), 0)
        n_rolls = jnp.ceil(need)
        u = jax.vmap(lambda k: rng.uniform(k, t, 0, rng.DIE))(keys)
        k = jnp.floor(jnp.log(u) / jnp.log(P["p_die"]))
        fails = k < n_rolls
        died = fails & (n_rolls > 0)
        drawn = jnp.where(fails, k, need)
        delivered = from_stock + drawn
        frac = jnp.where(total > 0, jnp.minimum(delivered / jnp.maximum(total, f(1e-38)), 1), 0)
        actual = req * frac
        if "fit" in duties:
            s = add4(actual)
            shrink = jnp.where(s > delivered, delivered / jnp.maximum(s, f(1e-38)) * f(1 - 4 * 2.0**-23), 1)
            actual = jnp.minimum(actual * shrink, req)
        left = jnp.maximum(stock - from_stock, 0)
        gone = died | (left < P["threshold"])
        grown = left + jnp.maximum(P["regen"] * left * (1 - left / P["capacity"]), -left)
        new_stock = jnp.where(gone, left, grown)
        gone = gone | (new_stock < P["threshold"])
        keep = live if "live" in duties else jnp.ones_like(live)
        out = (
            jnp.where(keep, new_stock, stock),
            jnp.where(keep, jnp.maximum(reserve - drawn, 0), reserve),
            jnp.where(keep, wealth + actual, wealth),
            ended | (live & gone),
            draws(t + 1),
            jnp.where(live, n_played + 1, n_played) if "live" in duties else n_played,
            jnp.where(live, actual, last) if "last_actual" in duties else last,
        )
        return out, None

    def run(keys_, P):
        c0 = (
            jnp.full(b, 150.0, f),
            jnp.full(b, 20.0, f),
            jnp.full((4, b), 30.0, f),
            jnp.zeros(b, bool),
            draws(1),
            jnp.zeros(b, jnp.int32),
            jnp.zeros((4, b), f),
        )
        return jax.lax.scan(lambda c, t: turn(c, t, P), c0, jnp.arange(1, turns + 1))[0]

    if "params" in duties:  # per-arena arrays, passed in: dynamic, as in a sweep
        P = {n: jnp.full((b,), v, jnp.int32 if n == "max_turns" else f) for n, v in numbers.items()}
        fn = jax.jit(run)
        args = (keys, P)
    else:  # compile-time constants
        P = {n: (v if n == "max_turns" else f(v)) for n, v in numbers.items()}
        fn = jax.jit(lambda keys_: run(keys_, P))
        args = (keys,)
    final = jax.block_until_ready(fn(*args))
    return (lambda: jax.block_until_ready(fn(*args))), final[2]


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--arenas", type=int, default=16384)
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", nargs="*", choices=RUNGS + ("kernel",), help="per-op times of these rungs instead")
    args = ap.parse_args()
    setup()
    out = Figures("xla_ladder", args.json)
    b, t = args.arenas, args.turns
    if args.profile:
        import profile_turn  # sets XLA's per-op trace flag before jax starts

        for name in args.profile:
            call = kernel_runner(b, t) if name == "kernel" else ladder_runner(name, b, t)[0]
            times = profile_turn.op_times(call, 5)
            per = {k: v / (5 * t) for k, (v, c) in times.items() if c == 5 * t and not k.startswith("end: ")}
            print(f"{name}: ops of the loop body, us per turn (sum {sum(per.values()):.0f}; spans overlap)")
            for k, v in sorted(per.items(), key=lambda kv: -kv[1])[:12]:
                print(f"  {v:8.1f} us  {k}")
        return
    import numpy as np
    import throughput

    calls, wealth = {}, {}
    for name in RUNGS:
        calls[name], wealth[name] = ladder_runner(name, b, t)
    calls["kernel"] = kernel_runner(b, t)
    calls["floor"] = throughput.noise_floor_runner(b, t)
    nb = throughput.numba_runner(b, t)
    if nb is not None:
        calls["numba"] = nb[1]
    import bdpd_jax

    res = bdpd_jax.simulate(throughput.config(t), n_arenas=b, history=False, progress=False)
    kw = res.summary[[f"wealth_{i}" for i in range(4)]].to_numpy().T
    print(
        f"B={b}, T={t}: us per turn, best of 5, {args.rounds} rounds interleaved "
        f"(floor share = floor time / time; numba ratio = numba time / time)"
    )
    overall = {k: float("inf") for k in calls}
    for r in range(args.rounds):
        best = throughput.best_of(calls, 5)
        overall = {k: min(overall[k], v) for k, v in best.items()}
        print(f"  round {r + 1}: " + _cells(best, t), flush=True)
    print("  best of all rounds: " + _cells(overall, t))
    out.emit("ladder", arenas=b, turns=t, **{f"{k}_us_per_turn": v / t * 1e6 for k, v in overall.items()})
    for name in RUNGS:
        same = np.isclose(np.asarray(wealth[name]), kw, rtol=1e-5, atol=1e-4).all(axis=0).mean()
        print(f"  {name}: {same:.1%} of arenas end with the kernel's wealth (to 1e-5)")


def _cells(best: dict, t: int) -> str:
    us = {k: v / t * 1e6 for k, v in best.items()}
    cells = []
    for k, v in us.items():
        extra = f" ({us['floor'] / v:.0%} floor" + (f", {us['numba'] / v:.1f}x numba)" if "numba" in us else ")")
        cells.append(f"{k} {v:.0f}" + ("" if k in ("floor", "numba") else extra))
    return "; ".join(cells)


def kernel_runner(b: int, t: int):
    import throughput

    return throughput.jax_runner(b, t)[1]


if __name__ == "__main__":
    main()
