"""Sizing a sweep's chunks: its devices and the memory one arena costs. The points
themselves are prepared by :func:`bdpd_jax.prepare.points.prepare_points`. Used by
:mod:`bdpd_jax.sweeps.plan`."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import numpy as np

from ..kernels.rollout import init_batch, run_turns


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
