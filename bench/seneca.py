"""Seneca engine benchmark: 3000 turns x B arenas, arena-turns/s and wall time.

Bare ODE (no players) with the engine's diffrax paths against hand-written Euler and RK4
steps in jnp and a numpy Euler loop; then full turns with 4 heuristic players (simulate,
histories off, the default harvest coupling of docs/semantics.md §9). Compile time is
reported apart from run time (best of --repeat runs). With players, "played/s" counts only
the arena-turns in which the arena was alive (a collapsed arena is frozen but still costs
its turns under vmap): the seed's mix (rcp, conservative, adaptive, aggressive) collapses
near turn 1845; the "alive" mix (rcp, conservative, conservative, rcp) plays all 3000.

    .venv/bin/python bench/seneca.py                 # B = 1, 256, 4096, 65536
    .venv/bin/python bench/seneca.py --sizes 1 4096  # a subset
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Figures, parser, setup  # noqa: E402

setup()  # XLA_FLAGS / EQX_ON_ERROR before jax or equinox is used

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import bdpd_jax as bj  # noqa: E402
from bdpd_jax.kernels.engines import get_engine  # noqa: E402
from bdpd_jax.kernels.engines.seneca import vector_field  # noqa: E402
from bdpd_jax.lab import engine_config_model  # noqa: E402

ENG = get_engine("seneca")
T = 3000


def hand_euler(s, p):
    y = jnp.stack([s.R, s.C, s.P])
    y = y + p.dt * vector_field(None, y, p)
    return type(s)(R=y[0], C=y[1], P=y[2], failed=s.failed), 0.0


def hand_rk4(s, p):
    y, h = jnp.stack([s.R, s.C, s.P]), p.dt
    k1 = vector_field(None, y, p)
    k2 = vector_field(None, y + h / 2 * k1, p)
    k3 = vector_field(None, y + h / 2 * k2, p)
    k4 = vector_field(None, y + h * k3, p)
    y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return type(s)(R=y[0], C=y[1], P=y[2], failed=s.failed), 0.0


def time_bare(step, p, b, repeat):
    pb = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x[..., None], (b,)), p)
    s0 = jax.vmap(ENG.init, in_axes=-1, out_axes=-1)(pb)
    vs = jax.vmap(step, in_axes=(-1, -1), out_axes=-1)

    def run(s, pp):
        return jax.lax.scan(lambda s, _: (vs(s, pp)[0], None), s, None, length=T)[0]

    t0 = time.perf_counter()
    f = jax.jit(run).lower(s0, pb).compile()
    jax.block_until_ready(f(s0, pb))
    comp = time.perf_counter() - t0
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(f(s0, pb))
        best = min(best, time.perf_counter() - t0)
    return comp, best


def numpy_euler(b, repeat):
    k1, k2, l1, l2, l3, dt = 0.03, 0.30, 0.0, 0.01, 0.0, 0.1
    best = np.inf
    for _ in range(repeat):
        r, c, q = np.ones(b, np.float32), np.full(b, 0.01, np.float32), np.full(b, 0.001, np.float32)
        t0 = time.perf_counter()
        for _t in range(T):
            rc, cp = k1 * r * c, k2 * c * q
            r, c, q = r + dt * (-rc - l3 * r), c + dt * (rc - cp - l1 * c), q + dt * (cp - l2 * q)
        best = min(best, time.perf_counter() - t0)
    return 0.0, best


SEED_MIX = ("rcp", "conservative", "adaptive", "aggressive")
ALIVE_MIX = ("rcp", "conservative", "conservative", "rcp")


def players_cfg(solver="euler", integrator="steps", players=SEED_MIX):
    return {
        "model": {
            "engineMode": "seneca",
            "maxTurns": T,
            "maxPlayers": 4,
            "seneca": {"solver": solver, "integrator": integrator},
        },
        "observability": {
            "commonsStock": {"visible": True},
            "capitalStock": {"visible": True},
            "pollutionLevel": {"visible": True},
        },
        "players": [{"strategy": s} for s in players],
    }


def time_players(b, repeat, **kw):
    """(compile s, best run s, played arena-turns: turns in which an arena was alive)."""
    cfg = players_cfg(**kw)
    t0 = time.perf_counter()
    res = bj.simulate(cfg, n_arenas=b, history=False, chunk_turns=T, progress=False)
    comp = time.perf_counter() - t0
    played = int(res.summary.turns_played.sum())
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        bj.simulate(cfg, n_arenas=b, history=False, chunk_turns=T, progress=False)
        best = min(best, time.perf_counter() - t0)
    return comp - best, best, played


def main():
    ap = parser(__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 256, 4096, 65536])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-players", action="store_true")
    ap.add_argument("--players-only", action="store_true", help="only the rows with players")
    a = ap.parse_args()
    out = Figures("seneca", a.json)
    seneca_model = engine_config_model("seneca")  # the engine's config model: its defaults applied once
    p = lambda **s: ENG.params_from_model(seneca_model.model_validate({"commonsInitial": 1.0, "seneca": s}))  # noqa: E731
    bare = {
        "hand euler (jnp)": (hand_euler, p()),
        "diffrax euler, steps": (ENG.step, p()),
        "diffrax euler, diffeqsolve": (ENG.step, p(integrator="diffeqsolve")),
        "hand rk4 (jnp)": (hand_rk4, p()),
        "diffrax tsit5, tableau": (ENG.step, p(solver="tsit5", integrator="tableau")),
        "diffrax tsit5, steps": (ENG.step, p(solver="tsit5")),
    }
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, {T} turns; best of {a.repeat}")
    print(
        f"{'case':40s} {'B':>6s} {'compile s':>9s} {'run s':>9s} {'arena-turns/s':>14s} {'played/s':>10s} {'alive':>6s}"
    )
    for b in a.sizes:
        rows = [
            (k, *time_bare(f, pp, b, a.repeat))
            for k, (f, pp) in bare.items()
            if not (b >= 65536 and k.endswith("tsit5, steps")) and not a.players_only
        ]  # ~30 s at B = 65536
        if b <= 4096 and not a.players_only:
            rows.append(("numpy euler", *numpy_euler(b, 1)))
        if not a.no_players:
            rows.append(("4 players (seed mix), euler steps", *time_players(b, a.repeat)))
            rows.append(("4 players (alive mix), euler steps", *time_players(b, a.repeat, players=ALIVE_MIX)))
            if not a.players_only:
                rows.append(("4 players (seed mix), diffeqsolve", *time_players(b, 1, integrator="diffeqsolve")))
        for name, comp, run, *played in rows:
            total = b * T
            done = played[0] if played else total
            print(
                f"{name:40s} {b:6d} {comp:9.2f} {run:9.4f} {total / run:14.3e} {done / run:10.3e} {done / total:6.1%}",
                flush=True,
            )
            out.emit(
                name,
                arenas=b,
                turns=T,
                compile_s=comp,
                run_s=run,
                arena_turns_per_s=total / run,
                played_per_s=done / run,
                alive_share=done / total,
            )


if __name__ == "__main__":
    main()
