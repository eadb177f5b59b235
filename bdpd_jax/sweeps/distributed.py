"""Sweeps past one machine: chunks dispatched to the workers of a Dask cluster.

The engine is ``dask.distributed`` (``pip install bdpd_jax[dist]``). The client builds the
sweep plan once (validating every point and fixing the chunk layout), scatters the plan's
inputs (config, points table, options) to every worker, and submits one task per chunk.
Each worker builds the same plan once (cached by a key of the run), so it compiles the
chunk program once whatever number of chunks it is given, runs each chunk on all of its
local devices (the arena axis sharded over a 1-D mesh, bdpd_jax/sweeps/sweep.py) and sends the
chunk's arena rows back; the client writes each part as it arrives (no shared filesystem
needed). Chunk ``k``'s rows depend only on the plan and ``k``, so the result is
bit-identical to a single-process run whatever worker ran which chunk.

Starting a cluster (docs/semantics.md §12 has the same):

    # on the head node
    dask scheduler --port 8786
    # on every machine (one process per machine: it shards over that machine's devices)
    dask worker tcp://HEAD:8786 --nworkers 1 --nthreads 1
    # anywhere that sees HEAD
    bdpd sweep spec.toml --out results/ --scheduler tcp://HEAD:8786

or from Python: ``run_sweep_file(spec, out, client=dask.distributed.Client("tcp://HEAD:8786"))``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pandas as pd

from ..config.game import ArenaConfig
from ..prepare.prepared import prepare
from ..run.options import RunOptions
from ..run.simulate import TRACES
from .sweep import SweepPlan, sweep

_PLANS: dict[str, Any] = {}


def _worker_plan(key: str, inputs: dict):
    plan = _PLANS.get(key)
    if plan is None:
        _PLANS.clear()  # one sweep's plan at a time per worker (bounded memory)
        options = inputs["options"]
        base = prepare(inputs["config"], generator=options.generator)
        plan = _PLANS[key] = SweepPlan(base, inputs["table"], options)
    return plan


def _run_chunk_task(key: str, inputs: dict, k: int) -> tuple[int, pd.DataFrame, dict]:
    """A worker's task: chunk k of the run ``key``; returns (k, rows, where/compile info)."""
    frame = _worker_plan(key, inputs).run_chunk(k)
    return k, frame, {"pid": os.getpid(), "traces": dict(TRACES)}


def client_of(client: Any):
    """A dask Client, or a new one for a scheduler address (``tcp://host:8786``)."""
    from dask.distributed import Client  # optional dependency: the dist extra

    if isinstance(client, str):
        return Client(client)
    return client


def run_chunks(
    client: Any, config, table: pd.DataFrame, options: RunOptions, chunks: list[int], *, info: list | None = None
) -> Iterator[tuple[int, pd.DataFrame]]:
    """Run the given chunks of the sweep ``(config, table, options)`` (a SweepPlan's, its
    chunk width pinned: :meth:`SweepPlan.worker_options`) on the cluster; yields ``(k, rows)``
    as chunks complete. ``info``: a list that receives each task's ``{"pid", "traces"}``."""
    from dask.distributed import as_completed  # optional dependency: the dist extra

    if not chunks:
        return
    cl = client_of(client)
    inputs = {"config": ArenaConfig.load(config), "table": table, "options": options}
    key = uuid.uuid4().hex
    [fut_inputs] = cl.scatter([inputs], broadcast=True, hash=False)  # one object, a unique key
    futures = [
        cl.submit(_run_chunk_task, key, fut_inputs, k, pure=False, key=f"bdpd-sweep-{key[:8]}-{k}") for k in chunks
    ]
    try:
        for fut in as_completed(futures):
            k, frame, where = fut.result()
            if info is not None:
                info.append({"chunk": k, **where})
            fut.release()
            yield k, frame
    finally:
        for f in futures:
            f.cancel()
        fut_inputs.release()
        if cl is not client:  # a client made here for an address
            cl.close()


def on_cluster(client: Any, info: list | None = None):
    """A chunk runner for :func:`bdpd_jax.sweep.run_points`: every chunk of the plan on the
    cluster of ``client`` (each worker plans the same chunks, :meth:`SweepPlan.worker_options`)."""

    def chunks(plan, progress=None) -> Iterator[tuple[int, pd.DataFrame]]:
        return run_chunks(client, plan.cfg, plan.table, plan.worker_options(), list(range(plan.n_chunks)), info=info)

    return chunks


def sweep_on_cluster(client: Any, config, grid=None, samples=None, points=None, *, info: list | None = None, **options):
    """``sweep`` with its chunks run on a Dask cluster; returns the same SweepResults.
    ``options``: ``sweep``'s keyword arguments (``replicates``, ``seed``, ``history``, ``turns``,
    ``max_batch``, ``memory_budget``, ``generator``, ``common_random``, ``names``,
    ``n_samples``); each worker runs its chunks on its own devices, without a progress bar."""
    return sweep(config, grid, samples, points, progress=False, chunks=on_cluster(client, info), **options)
