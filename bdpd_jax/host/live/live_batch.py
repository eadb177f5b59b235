"""``LiveBatch``: many live arenas advanced in lockstep, one batched kernel call per phase.

Each turn the batch makes ONE ``decide_phase`` call and ONE ``step_phase`` call for all its
arenas (``jax.vmap`` over the trailing batch axis, like kernels/rollout.py's ``batched``),
and asks every external player of every arena at once (one ``asyncio.gather``): 100 LLM
arenas cost two kernel launches per turn and the time of the slowest player, not 100 x that.

The arenas must share one :class:`~bdpd_jax.kernels.game.Game` (the same players' kinds,
strategies, engine, scheduler and layers; numbers such as seeds, stocks or wealth may
differ) and start together. An arena that ends early is frozen by the kernel and skipped by
the host while the others play on. Each arena keeps its own bus, pact registry, records
and folder, and its kernel state (``arena.state``): each tick stacks them into the batch and
writes each new state back.
"""

from __future__ import annotations

import gc
from typing import Any

from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.batch_runner import LockstepBatch
from bdpd_jax.host.live.sync_loop import Offload, SyncLoop, inline, run_to_end


class LiveBatch:
    """Arenas ticked together. ``tick()`` / ``run()`` / ``close()``; ``await atick()`` /
    ``await arun()`` / ``await aclose()`` inside an event loop."""

    def __init__(self, arenas: list[Arena], *, client=None, gc_freeze: bool = True) -> None:
        arenas = list(arenas)
        if not arenas:
            raise ValueError("arenas: need at least one arena")
        if client is not None:  # one pooled HTTP client for every arena's agents
            for a in arenas:
                a.use_client(client)
        self.arenas = arenas
        self._batch: LockstepBatch = Arena.lockstep(arenas)  # keys, params, programs: no state
        if len({a.turn for a in arenas}) > 1:
            raise ValueError(f"arenas: at turns {[a.turn for a in arenas]}; a LiveBatch starts them together")
        self._loop = SyncLoop("LiveBatch")  # tick() / run() / close() when some arena waits on someone
        self._gc_freeze = gc_freeze

    @property
    def done(self) -> bool:
        return all(a.done for a in self.arenas)

    async def atick(self, offload: Offload = inline) -> list[dict[str, Any] | None]:
        """One turn of every arena still playing; each arena's record (None if it had ended).
        ``offload``: where the kernel work runs (host/live/offload.py; a worker thread lets other
        batches on this loop read answers and send requests meanwhile)."""
        before = [a.turn for a in self.arenas]
        await self._batch.tick(offload)
        if self._gc_freeze:
            freeze_history()
        return [a.records[-1] if a.turn != t0 else None for a, t0 in zip(self.arenas, before, strict=True)]

    async def arun(self, max_ticks: int | None = None) -> list[dict[str, Any]]:
        """Tick until every arena is over (or ``max_ticks``), then close them; summaries."""
        return await run_to_end(self, max_ticks)

    def summary(self) -> list[dict[str, Any]]:
        """Every arena's summary (``Arena.summary``)."""
        return [a.summary() for a in self.arenas]

    def tick(self) -> list[dict[str, Any] | None]:
        """``atick`` run to its end: with no event loop when no arena's tick waits on anyone
        (built-in and scripted players), else on the loop of this sync caller (``SyncLoop``)."""
        return self._loop.drive(self.atick(), self._batch.waits)

    def run(self, max_ticks: int | None = None) -> list[dict[str, Any]]:
        return self._loop.drive(self.arun(max_ticks), self._batch.waits)

    def close(self) -> list[dict[str, Any]]:
        out = self._loop.drive(self.aclose(), self._batch.waits)
        self._loop.close()
        return out

    async def aclose(self) -> list[dict[str, Any]]:
        """Close every arena (``Arena.aclose``); their summaries."""
        out = [await a.aclose() for a in self.arenas]
        if self._gc_freeze:
            gc.unfreeze()  # what was kept for the run is collectable again
        return out


def freeze_history() -> None:
    """Keep what a tick left alive (the turn records, kept for the whole run) out of the
    cyclic garbage collector's full passes: a young collection first (this tick's cyclic
    garbage is freed, not frozen), then ``gc.freeze()``. Every record is ~10 tracked
    containers; without this each full pass re-scanned the whole history, a cost that grew
    with the run (bench/README.md). Records are freed by reference counting as usual;
    only a cycle that dies while frozen waits for ``gc.unfreeze()`` (:meth:`LiveBatch.close`)."""
    gc.collect(1)
    gc.freeze()


__all__ = ["LiveBatch", "freeze_history"]
