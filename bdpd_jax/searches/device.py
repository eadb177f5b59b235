"""The device loop of :func:`~bdpd_jax.search.search`: many generations in ONE compiled program.

A generation of the host loop (bdpd_jax/searches/search.py) is the optimiser's ask, the
candidates' params built on the host, one sweep, its points frame, the ranking and the tell,
each a trip through Python. When every piece can be traced it runs instead inside a
``lax.scan`` over generations (:func:`device_program`): evosax's pure ``ask``/``tell``
(cached programs, bdpd_jax/searches/methods.py), the candidates' values written into the
params leaves that hold them, the batched run (the kernels' ``run_turns`` and
``final_numbers``, as ``simulate``'s one-program path), the ranked columns' statistics, the
ranking (:func:`~.ranking.order`'s rule with jax.numpy) and the tell. The host gets each
block of generations' per-arena outcomes back, builds their rows with the sweep's own
aggregation, writes them (``out=``) and reports.

It applies (:func:`device_plan`) when the method is an evosax ES, no column read needs the
per-turn records, and every searched path is a float field stored in the params as its value
(probe builds check this: each path moves only its own leaf elements, and they hold the value
cast to the leaf's dtype); the engine's sustainable yield (``efficiency``) may move with the
paths only affinely. Otherwise the host loop runs. See docs/semantics/sweeps.md, "Device loop".
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..kernels.rollout import init_batch, run_turns
from ..prepare.game import broadcast_batch
from ..prepare.points import prepare_points
from ..prepare.prepared import PreparedRun
from ..run.options import RunOptions
from ..run.runner import keys_of
from ..run.simulate import FLOAT, final_numbers
from ..sweeps.results import POINT_OUTCOMES, STATS, Z95, aggregate, gini
from .methods import TRACES, EsPrograms, es_key
from .ranking import miss, order
from .space import Space, outside, unit_values

# Generations per compiled block (the host sees each block's rows, writes and reports them).
DEVICE_BLOCK = 16
# Fractions of each range at which the probe builds put the paths.
_PROBES = (0.25, 0.75, 0.5)


@dataclass(frozen=True)
class DevicePlan:
    """What the device loop needs of a config and space: the static game, the params leaves
    of one arena (numpy), where each path's value lives (``slots``: leaf index, flat element,
    path), the run's turns and the sustainable yield as ``y0 + slope . v``."""

    game: Any
    treedef: Any
    leaves: tuple[np.ndarray, ...]
    slots: tuple[tuple[int, int, int], ...]
    n_turns: int
    y0: float
    slope: np.ndarray  # float[D]


def device_plan(base: PreparedRun, sp: Space, turns: int | None) -> DevicePlan | str:
    """The plan of the search's prepared base config, or why the device loop cannot run this
    space (a sentence)."""
    if sp.integer.any():
        return f"integer field(s) {[n for n, i in zip(sp.names, sp.integer, strict=True) if i]} are searched"
    d = sp.dim
    a, b, c = (sp.low + f * (sp.high - sp.low) for f in _PROBES)
    rows = [a] + [np.where(np.arange(d) == j, b, a) for j in range(d)] + [c]
    table = pd.DataFrame(rows, columns=list(sp.names))
    try:
        pts = prepare_points(base, sp.names, table, turns=turns, separable_min=1 << 30)
    except ValueError as err:
        return f"the probe builds failed ({err})"
    game, stacked, treedef, n_turns, yields = pts.game, pts.stacked, pts.treedef, pts.n_turns, pts.max_yield
    slots = []
    owned = np.zeros(d, bool)
    for li, x in enumerate(stacked):
        flat = np.asarray(x).reshape(-1, len(rows))
        moved = np.flatnonzero(np.any(flat != flat[:, :1], axis=1))
        for e in moved:
            col = flat[e]
            who = [j for j in range(d) if col[j + 1] != col[0]]
            if len(who) != 1 or flat.dtype.kind != "f":
                return f"a params leaf depends on {[sp.names[j] for j in who] or 'the paths together'}"
            j = who[0]
            want = np.asarray([a[j], *(b[j] if k == j else a[j] for k in range(d)), c[j]], flat.dtype)
            if not np.array_equal(col, want):
                return f"{sp.names[j]!r} is not stored in the params as its value"
            slots.append((li, int(e), j))
            owned[j] = True
    if not owned.all():
        return f"{[n for n, o in zip(sp.names, owned, strict=True) if not o]} move no params leaf"
    y = np.asarray(yields, float)
    slope = (y[1 : d + 1] - y[0]) / (b - a)
    if not np.all(np.isnan(y)) and not np.isclose(y[-1], y[0] + slope @ (c - a), rtol=1e-9, atol=0.0):
        return "the sustainable yield is not affine in the searched paths"
    leaves = tuple(np.array(np.asarray(x)[..., 0]) for x in stacked)  # (ascontiguousarray makes 0-d 1-d)
    slope = np.nan_to_num(slope)
    # as intercept + slope . v: a yield proportional to one path (the logistic r K / 4) is then
    # one rounding of an exact product, as the host's float64 yield cast to float32
    # all the turns in one scan (a sweep's chunks of default_chunk turns give the same numbers)
    return DevicePlan(game, treedef, leaves, tuple(slots), max(n_turns), float(y[0] - slope @ a), slope)


def arena_columns(fin: dict[str, Any]) -> dict[str, np.ndarray]:
    """Per-arena outcome columns of a batch's final numbers, as a sweep's chunk reads them
    (bdpd_jax/sweeps/plan.py ``chunk_columns``): survived, collapse_turn (NaN when survived),
    the kernels' outcome columns, wealth_mean and gini."""
    out = fin["outcomes"]
    survived = np.asarray(fin["survived"])
    return {
        "survived": survived,
        "collapse_turn": np.where(survived, np.nan, fin["collapse_turn"]),
        **out,
        "wealth_mean": np.asarray(fin["wealth"], float).mean(axis=0),
        "gini": gini(out["equality"]),
    }


def points_of_block(fin: dict[str, Any], population: int, replicates: int) -> list[pd.DataFrame]:
    """Each generation's points frame (the sweep's columns, by the sweep's own aggregation)."""
    frames = []
    b = population * replicates
    point = np.repeat(np.arange(population, dtype=np.int64), replicates)
    for g in range(np.asarray(fin["survived"]).shape[0]):
        cols = arena_columns(jax.tree_util.tree_map(lambda x, g=g: np.asarray(x)[g][..., :b], fin))
        frames.append(aggregate({"point": point, **cols}, [], list(POINT_OUTCOMES)))
    return frames


def _device_column(name: str, cols: dict[str, jax.Array], v: jax.Array, names: tuple[str, ...]) -> jax.Array:
    """float[P]: a ranked column of a generation from its per-arena columns [P, R] (the
    statistics of the sweep's points frame, in the run's float)."""
    if name in names:
        return v[:, names.index(name)]
    if name == "replicates":
        return jnp.full(v.shape[0], cols["survived"].shape[1], FLOAT)
    stat = next(st for st in STATS if name.endswith("_" + st))
    o = name[: -len(stat) - 1]
    x = cols[o].astype(FLOAT)
    ok = ~jnp.isnan(x)
    n = ok.sum(axis=1)
    mean = jnp.where(ok, x, 0).sum(axis=1) / n
    sd = jnp.sqrt(jnp.where(ok, (x - mean[:, None]) ** 2, 0).sum(axis=1) / (n - 1))
    half = Z95 * sd / jnp.sqrt(n)
    return {"mean": mean, "sd": sd, "n": n.astype(FLOAT), "ci_low": mean - half, "ci_high": mean + half}[stat]


@functools.lru_cache(maxsize=16)
def device_program(
    prog: EsPrograms,
    plan_key: tuple[Any, ...],
    population: int,
    replicates: int,
    names: tuple[str, ...],
    objective: tuple[str, str],
    constraints: tuple[tuple[str, str, float], ...],
    common_random: bool,
    block: int,
) -> Any:
    """The jitted block of ``block`` generations: ``(es_state, es_params, key, g0, seeds,
    low, high, leaves, y0, slope) -> (es_state, per generation: unit x, values, final
    numbers)``. Cached by everything static (one compile per shape, across calls)."""
    game, treedef, slots, n_turns = plan_key
    b = population * replicates
    point_of = np.arange(b) // replicates
    offsets = jnp.asarray(np.arange(b) % replicates if common_random else np.arange(b), jnp.uint32)
    col, sense = objective

    def generation(carry: Any, xs: Any) -> Any:
        state, es_params, key, low, high, leaves, y0, slope = carry
        g, seed = xs
        x, state = prog.ask(es_key(key, g, 0), state, es_params)
        v = unit_values(jnp.clip(x, 0.0, 1.0), low, high)  # float32 [P, D], as the host loop's
        params = broadcast_batch(jax.tree_util.tree_unflatten(treedef, list(leaves)), b)
        flat = jax.tree_util.tree_leaves(params)
        for li, e, j in slots:
            shaped = flat[li].reshape(-1, b)
            flat[li] = shaped.at[e].set(v[point_of, j].astype(shaped.dtype)).reshape(flat[li].shape)
        params = jax.tree_util.tree_unflatten(treedef, flat)
        my = (y0 + (v * slope).sum(axis=1))[point_of].astype(FLOAT)
        st, _ = run_turns(game, n_turns, False, keys_of(seed, offsets), init_batch(game, params), params, 1, True)
        fin = final_numbers(game, st, params, my)
        keep = {k: fin[k] for k in ("survived", "collapse_turn", "wealth", "outcomes")}
        survived = fin["survived"]
        cols = {"survived": survived, "collapse_turn": jnp.where(survived, jnp.nan, fin["collapse_turn"])}
        cols |= fin["outcomes"] | {"wealth_mean": fin["wealth"].astype(FLOAT).mean(axis=0)}
        cols["gini"] = 1.0 - fin["outcomes"]["equality"]
        per = {k: jnp.reshape(c, (population, replicates)) for k, c in cols.items()}
        f = _device_column(col, per, v, names)
        f = jnp.where(jnp.isnan(f), jnp.inf, -f if sense == "max" else f)
        viol = jnp.zeros(population, FLOAT)
        for c, op, bound in constraints:
            viol = viol + miss(_device_column(c, per, v, names), op, bound, jnp)
        rank = jnp.zeros(population, jnp.int32).at[order(f, viol + outside(x, jnp), jnp)].set(jnp.arange(population))
        state, _m = prog.tell(es_key(key, g, 1), x, rank.astype(jnp.float32), state, es_params)
        return (state, es_params, key, low, high, leaves, y0, slope), (x, v, keep)

    def run(state, es_params, key, g0, seeds, low, high, leaves, y0, slope):  # noqa: ANN001, ANN202
        TRACES["device"] += 1  # once per trace, never per call
        gens = g0 + jnp.arange(block, dtype=jnp.int32)
        carry = (state, es_params, key, low, high, leaves, y0, slope)
        carry, out = jax.lax.scan(generation, carry, (gens, seeds))
        return carry[0], out

    return jax.jit(run)


def run_device(
    opt: Any,
    plan: DevicePlan,
    sp: Space,
    objective: tuple[str, str],
    constraints: list[tuple[str, str, float]],
    *,
    population: int,
    options: RunOptions,
    seeds: list[int],
    start: int,
    generations: int,
) -> Any:
    """Generations ``start`` .. ``generations - 1`` in blocks of one compiled program each,
    continuing ``opt`` (an :class:`~.methods.EvosaxMethod`: its state is advanced). Yields
    per generation ``(g, unit x, values, points frame)``. ``options``: the search's
    (replicates, common random numbers); ``seeds``: every generation's sweep seed. A block
    is at most DEVICE_BLOCK generations, all of one length (the last block may run a few
    generations past ``generations``; they are dropped)."""
    replicates = int(options.replicates)
    left = generations - start
    n_blocks = -(-left // DEVICE_BLOCK)
    block = -(-left // n_blocks)
    run = device_program(
        opt.prog,
        (plan.game, plan.treedef, plan.slots, plan.n_turns),
        population,
        replicates,
        sp.names,
        objective,
        tuple(constraints),
        bool(options.common_random),
        block,
    )
    f32 = np.float32
    consts = (
        jnp.asarray(sp.low, f32),
        jnp.asarray(sp.high, f32),
        tuple(jnp.asarray(x) for x in plan.leaves),
        jnp.asarray(plan.y0, f32),
        jnp.asarray(plan.slope, f32),
    )
    for g0 in range(start, generations, block):
        gs = np.arange(g0, g0 + block)
        words = np.asarray([seeds[g] if g < len(seeds) else 0 for g in gs], np.uint32)
        state, (x, v, fin) = run(opt.state, opt.params, opt.key, jnp.int32(g0), jnp.asarray(words), *consts)
        opt.state = state
        x, v, fin = jax.device_get((x, v, fin))
        frames = points_of_block(fin, population, replicates)
        for i, g in enumerate(gs):
            if g < generations:
                yield int(g), np.asarray(x[i], float), np.asarray(v[i], float), frames[i]
