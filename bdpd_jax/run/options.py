"""How a batch run runs, as one frozen object: ``RunOptions``.

What a run plays is its :class:`~bdpd_jax.prepare.prepared.PreparedRun` (or a sweep's
:class:`~bdpd_jax.prepare.points.PreparedPoints`); how it plays them (seed, turns, chunking,
devices, history, progress, a sweep's replicates) is this object, built and checked once at
the public edge (``simulate``, ``sweep``, ``sensitivity``, ``search``, ``sweep_on_cluster``, a
sweep spec) and passed down whole, never relayed keyword by keyword.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..config.limits import DEFAULT_MAX_BATCH, check_run_args


@dataclass(frozen=True)
class RunOptions:
    """A run's options (each checked when made: ValueError naming the field and value).

    replicates: arenas per point (a sweep); seed: the run's seed (uint32); history: keep
    per-turn records; turns: turns to play (None: each config's ``model.maxTurns``);
    max_batch: the most arenas run at once; memory_budget: bytes a chunk may use (None: no
    bound); generator: ``"hash"`` or ``"threefry"``; round_ints: a float set where the
    config holds an int is rounded (sampled points); common_random: replicate ``r`` of every
    point draws from ``(seed, r)``; devices: None (every local device), a count or a list of
    jax devices; chunk_width: arenas per chunk when fixed elsewhere (a Dask worker, a
    resumed run); progress: a progress bar (None: when the run has more than four chunks);
    chunk_turns: turns per compiled chunk (None: the default, ``simulate.default_chunk``);
    history_every: keep every k-th turn's records (``simulate``).
    """

    replicates: int = 1
    seed: int = 0
    history: bool = False
    turns: int | None = None
    max_batch: int = DEFAULT_MAX_BATCH
    memory_budget: int | None = None
    generator: str = "hash"
    round_ints: bool = False
    common_random: bool = False
    devices: Any = None
    chunk_width: int | None = None
    progress: bool | None = None
    chunk_turns: int | None = None
    history_every: int = 1

    def __post_init__(self) -> None:
        check_run_args(
            replicates=self.replicates,
            seed=self.seed,
            turns=self.turns,
            max_batch=self.max_batch,
            memory_budget=self.memory_budget,
            chunk_turns=self.chunk_turns,
            history_every=self.history_every,
        )
        if self.generator not in ("hash", "threefry"):
            raise ValueError(f"generator: unknown {self.generator!r}; known: ['hash', 'threefry']")

    def replace(self, **changes: Any) -> RunOptions:
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)

    def plan_key(self) -> str:
        """What makes two sweeps' plans the same (every field but ``progress``)."""
        return repr(self.replace(progress=None))

    def for_worker(self, chunk_width: int) -> RunOptions:
        """The options with which another process (a Dask worker) plans the same chunks: the
        chunk width pinned (its devices may differ), no memory budget, no progress bar."""
        return self.replace(chunk_width=int(chunk_width), memory_budget=None, devices=None, progress=False)
