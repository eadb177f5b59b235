"""Building the per-point params of a sweep (:func:`build_points`: point by point or the
separable build, diagnostics of points that change the game's structure or shapes) and sizing
its chunks (arguments, devices, memory per arena). Used by :mod:`bdpd_jax.sweep`."""

from __future__ import annotations

import contextlib
import dataclasses
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..kernels.rollout import init_batch, run_turns
from ..prepare.game import build, sustainable_yield
from .paths import ConfigBase, apply_values, describe_point, plain_value

# ----------------------------------------------------------------------------- the run


def game_diff(a, b) -> list[str]:
    return [f.name for f in dataclasses.fields(a) if getattr(a, f.name) != getattr(b, f.name)]


def param_shapes(params) -> tuple:
    leaves, treedef = jax.tree_util.tree_flatten(params)
    return treedef, tuple((np.shape(x), np.asarray(x).dtype) for x in leaves)


def shape_culprits(base: ConfigBase, names, values0, values_i, differs, build_kw, round_ints) -> list[str]:
    """The parameters that alone, applied to point 0, make ``differs(point0, that) `` true."""
    cfg0 = apply_values(base, names, values0, round_ints=round_ints)
    ref = build(cfg0, **build_kw)
    found = []
    for j, n in enumerate(names):
        if plain_value(values0[j]) == plain_value(values_i[j]):
            continue
        vals = list(values0)
        vals[j] = values_i[j]
        try:
            other = build(apply_values(base, names, vals, round_ints=round_ints), **build_kw)
        except ValueError:
            continue
        if differs(ref, other):
            found.append(n)
    return found or [n for j, n in enumerate(names) if plain_value(values0[j]) != plain_value(values_i[j])]


def governance_shapes(configs) -> dict | None:
    from ..config.governance import needed_slots
    from ..prepare.governance import sanction_specs, uses_governance

    if not any(uses_governance(c) for c in configs):
        return None
    return {
        "pact_slots": max(needed_slots(c) for c in configs),
        "ladder_width": max([1] + [len(s.ladder) for c in configs for s in sanction_specs(c)]),
        "n_specs": max(len(sanction_specs(c)) for c in configs),
    }


def cpu_build_device():
    """Build per-point params on the CPU backend when there is one (no per-leaf transfers)."""
    try:
        return jax.default_device(jax.devices("cpu")[0])
    except RuntimeError:
        return contextlib.nullcontext()


def param_leaves(params, n_turns: int) -> tuple[list[np.ndarray], Any]:
    p = params.with_max_turns(jnp.asarray(n_turns, jnp.int32))
    leaves, treedef = jax.tree_util.tree_flatten(p)
    return [np.asarray(x) for x in leaves], treedef


def same_leaf(a: np.ndarray, b: np.ndarray) -> bool:
    """Two params leaves equal: shape, dtype and values (NaN equal to NaN)."""
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def _key(v: Any) -> str:
    return repr(plain_value(v))


_SEPARABLE_CHECKS = 8


def build_separable(base, names, values, n_turns, turns, generator, round_ints):
    """Stacked leaves composed from one build per distinct value of each parameter, when
    every params leaf depends on at most one swept parameter; verified bit for bit against
    full builds of a spread of points. None when not applicable (the caller builds every point)."""
    P = len(values)
    cols = [[_key(v[j]) for v in values] for j in range(len(names))]
    uniq = [list(dict.fromkeys(c)) for c in cols]
    if sum(len(u) for u in uniq) * 2 > P:
        return None
    first = {}  # a point holding each distinct value
    for j in range(len(names)):
        first[j] = {}
        for i, k in enumerate(cols[j]):
            first[j].setdefault(k, i)
    kw = {"generator": generator}

    def build_at(vals):
        cfg = apply_values(base, names, vals, round_ints=round_ints)
        with cpu_build_device():
            g, p = build(cfg, **kw)
        return g, param_leaves(p, int(turns or cfg.model.max_turns))

    game0, (leaves0, treedef) = build_at(values[0])
    variants: list[list[list[np.ndarray]]] = []
    for j in range(len(names)):
        per_value = []
        for k in uniq[j]:
            vals = list(values[0])
            vals[j] = values[first[j][k]][j]
            g, (lv, td) = build_at(vals)
            if (
                g != game0
                or td != treedef
                or any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(lv, leaves0, strict=True))
            ):
                return None  # a structure or shape change: the full path explains it
            per_value.append(lv)
        variants.append(per_value)
    owner: dict[int, int] = {}
    for j, per_value in enumerate(variants):
        for li in range(len(leaves0)):
            if any(not same_leaf(lv[li], leaves0[li]) for lv in per_value):
                if li in owner:
                    return None  # a leaf depends on two parameters: not separable
                owner[li] = j
    index = [np.asarray(pd.factorize(pd.Series(cols[j]))[0], np.int64) for j in range(len(names))]
    stacked = []
    for li, x0 in enumerate(leaves0):
        if li in owner:
            j = owner[li]
            table_j = np.stack([lv[li] for lv in variants[j]], axis=-1)  # [..., U_j]
            stacked.append(np.ascontiguousarray(table_j[..., index[j]]))
        else:
            stacked.append(np.broadcast_to(x0[..., None], x0.shape + (P,)))
    checks = sorted(set(np.linspace(0, P - 1, _SEPARABLE_CHECKS).astype(int).tolist()))
    for i in checks:
        g, (lv, _) = build_at(values[i])
        if g != game0 or not all(same_leaf(a, x[..., i]) for a, x in zip(lv, stacked, strict=True)):
            return None
    return game0, stacked, treedef


def _check_one_structure(built, base, names, values, build_kw, round_ints) -> None:
    """Every point's Game equals point 0's (one compiled program), else ValueError naming the
    parameters that change it."""
    game0 = built[0][0]
    for i, (g, _) in enumerate(built):
        if g != game0:
            bad = shape_culprits(base, names, values[0], values[i], lambda a, b: a[0] != b[0], build_kw, round_ints)
            raise ValueError(
                f"sweep: parameter(s) {bad} change the static structure of the game "
                f"(Game.{'/'.join(game_diff(game0, g))} differs between point 0 ({describe_point(names, values[0])}) "
                f"and point {i} ({describe_point(names, values[i])})); only values that keep the structure "
                "(strategies, number of players, engine, scheduler, layers) share one compiled program: "
                "run one sweep per structure"
            )


def build_points(base, names, table, turns, generator, round_ints, *, separable_min: int):
    """Point 0's config, the shared Game, stacked numpy leaves [..., P], treedef, each
    point's turns and sustainable yield, and the build mode. One pass: every point's config
    is validated once, the governance layer's shapes are the sweep's largest (one program),
    and every point is built once (or, for a sweep of at least ``separable_min`` points whose
    params are separable, once per distinct value of each parameter)."""
    values = [tuple(r) for r in table.itertuples(index=False, name=None)]
    configs = [apply_values(base, names, v, round_ints=round_ints, where=f" point {i}") for i, v in enumerate(values)]
    n_turns = [int(turns or c.model.max_turns) for c in configs]
    yields = np.asarray([sustainable_yield(c) for c in configs], float)
    if len(values) >= separable_min:
        fast = build_separable(base, names, values, n_turns, turns, generator, round_ints)
        if fast is not None:
            game0, stacked, treedef = fast
            return configs[0], game0, stacked, treedef, n_turns, yields, "separable"
    build_kw: dict = {"generator": generator}
    gov = governance_shapes(configs)
    if gov is not None:  # the governance arrays padded to the sweep's largest (one program)
        build_kw["governance"] = gov
    with cpu_build_device():  # per-point params are small: build them on the host, stack, then transfer
        built = [build(c, **build_kw) for c in configs]
    _check_one_structure(built, base, names, values, build_kw, round_ints)
    game0 = built[0][0]
    shapes0 = param_shapes(built[0][1])
    for i, (_, p) in enumerate(built):
        if param_shapes(p) != shapes0:
            bad = shape_culprits(
                base,
                names,
                values[0],
                values[i],
                lambda a, b: param_shapes(a[1]) != param_shapes(b[1]) or a[0] != b[0],
                build_kw,
                round_ints,
            )
            raise ValueError(
                f"sweep: parameter(s) {bad} change the shapes of the params (point 0: "
                f"{describe_point(names, values[0])}; point {i}: {describe_point(names, values[i])}); "
                "only values that keep every array's shape share one compiled program"
            )
    leaves_per_point = []
    treedef = None
    for (_, p), nt in zip(built, n_turns, strict=True):
        leaves, treedef = param_leaves(p, nt)
        leaves_per_point.append(leaves)
    stacked = [np.stack([pl[j] for pl in leaves_per_point], axis=-1) for j in range(len(leaves_per_point[0]))]
    return configs[0], game0, stacked, treedef, n_turns, yields, "per point"


def resolve_devices(devices: Any = None) -> list:
    """``None``: every local device; an int ``k``: the first k; a list of jax devices as is."""
    local = jax.local_devices()
    if devices is None:
        return list(local)
    if isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        if not 1 <= devices <= len(local):
            raise ValueError(f"devices: must be between 1 and the {len(local)} local device(s), got {devices!r}")
        return list(local[: int(devices)])
    devs = list(devices)
    if not devs or not all(isinstance(d, jax.Device) for d in devs):
        raise ValueError(f"devices: None, a count, or a non-empty list of jax devices, got {devices!r}")
    return devs


def _nbytes(tree) -> int:
    return int(sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in jax.tree_util.tree_leaves(tree)))


# Host bytes per summary cell of a kept arena row (value, pandas copies while concatenating).
ROW_CELL_BYTES = 32
# Device working set per arena = this many copies of (params + state) (in/out buffers of the
# jitted chunk, XLA temporaries of one turn).
DEVICE_COPIES = 6


def bytes_per_arena(game, params1, keys1, chunk_turns: int, history: bool, n_columns: int) -> int:
    """An estimate of the memory one arena of a chunk costs (see docs/semantics.md §12)."""
    state = jax.eval_shape(partial(init_batch, game), params1)
    per = DEVICE_COPIES * (_nbytes(state) + _nbytes(params1))
    if history:
        _, rec = jax.eval_shape(partial(run_turns, game, 1, True), keys1, state, params1)
        per += 3 * chunk_turns * _nbytes(rec)  # device records, host copy, flattened frame
    return per + ROW_CELL_BYTES * n_columns
