"""``Ticker``: the server's auto-ticking arenas, ticked in groups (issue 16 item 4).

Auto-ticking arenas whose players are all built-in and that share a compiled game
(``arena.game``: players' kinds and strategies, engine, scheduler, layers; numbers may
differ) and a ``tickIntervalMs`` form one **group**. A group tick is ONE batched kernel call
per phase for all its members (:meth:`Arena.regroup`, the machinery of ``LiveBatch``): the
members' states, which each arena owns, are stacked in and the new ones written back, so each
arena goes on from its own state at its own turn and its records are those it plays ticked
alone, bit for bit. A group is due ``tickIntervalMs`` after its previous
tick ended (as one arena was before); an arena that starts auto-ticking joins its group's
next tick (at once when the group is new). The batch is padded to the next power of two (at
least 4, :func:`batch_width`), so a growing group compiles a few widths. Membership changes
(start, stop, close, delete, a manual tick, the game's end) take effect at the next group
tick, which rebuilds the batch (its keys and params; the batch never holds a state).

Arenas with an external player (code, HTTP, LLM, scripted) or a live governance agent are
groups of one, ticked by their own Arena as before: their ticks wait on players (up to
``agentTimeout``) and would hold up every member. With ``grouping=False`` every arena is a
group of one (the baseline of bench/server.py).

The scheduler is one task on the server's event loop, the process's only loop; kernel work
runs in the hub's worker threads, so ``/api/health`` is never queued behind a tick. A group
tick, or the tick of an arena that waits on no one, runs whole in a worker (holding one
``--workers`` slot; nothing suspends, so it runs without an event loop,
``sync_loop.drive``). An arena that waits on someone ticks on the server's loop
(:meth:`Ticker.astep`): its players are awaited there and its kernel work is offloaded to the
workers, a slot per piece. A group tick holds every member's locks (taken in arena-id order) while it runs, so
owner requests (perturb, summary, close) on a member wait for it, as for one arena.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Hashable
from contextlib import ExitStack
from typing import Any

from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.live_batch import freeze_history
from bdpd_jax.host.live.sync_loop import Offload, drive
from bdpd_jax.host.server.durable import sync_files
from bdpd_jax.host.server.live import LiveArena, Workers

#: records published to the streams before the event loop is given back (other requests)
PUBLISH_CHUNK = 64


#: what ticks leave alive (the arenas' kept records) is frozen out of the cyclic GC's full
#: passes at most every FREEZE_EVERY_S (``live_batch.freeze_history``); every UNFREEZE_EVERY_S
#: it is unfrozen and collected once, so reference cycles that died meanwhile are freed
FREEZE_EVERY_S = 0.1
UNFREEZE_EVERY_S = 600.0


#: the narrowest compiled batch of a group (groups of 1-4 arenas share one program)
MIN_WIDTH = 4


def batch_width(n: int) -> int:
    """The compiled batch width a group of ``n`` arenas runs at: the next power of two (at
    least ``MIN_WIDTH``), so a group growing to 1 000 arenas compiles 9 widths, not 1 000."""
    return max(MIN_WIDTH, 1 << max(0, n - 1).bit_length())


def records_path(a: Arena):
    return None if a.out_dir is None else a.out_dir / "turns.jsonl"


class Group:
    """Arenas ticked together: members by id, when the next tick is due, the batch of the
    last tick (and the member ids it was built for)."""

    def __init__(self, key: Hashable, interval_s: float) -> None:
        self.key = key
        self.interval_s = interval_s
        self.members: dict[str, LiveArena] = {}
        self.due = time.monotonic()
        self.task: asyncio.Task | None = None
        self.batch: Any = None  # the group's LockstepBatch (keys, params, programs; no state)
        self.batch_ids: tuple[str, ...] = ()
        self.paths: list = []  # the members' turns.jsonl, in batch order
        self.solo = isinstance(key, tuple) and key[0] == "solo"

    def start(self, task: asyncio.Task) -> None:
        """The group's tick is running as ``task``."""
        self.task = task

    def ticked(self) -> None:
        """The tick ended: the next one is due one interval from now."""
        self.task = None
        self.due = time.monotonic() + self.interval_s

    def batch_for(self, arenas: list, ids: tuple[str, ...], paths: list) -> Any:
        """The group's batch rebuilt for ``arenas`` (ids and record paths in batch order)."""
        self.batch = Arena.regroup(arenas, batch_width(len(arenas)))
        self.batch_ids, self.paths = ids, paths
        return self.batch

    def close(self) -> None:
        self.batch = None


class Ticker:
    """The auto-tick scheduler of a :class:`~bdpd_jax.host.server.store.Hub`: ticks run on
    ``workers``; ``finish(lv, summary)`` is called for an arena whose game ended with a tick."""

    def __init__(
        self, workers: Workers, finish: Callable[[LiveArena, dict[str, Any]], None], grouping: bool = True
    ) -> None:
        self.workers = workers
        self.finish = finish
        self.grouping = grouping
        self.groups: dict[Hashable, Group] = {}
        self.where: dict[str, Group] = {}
        self._heap: list[tuple[float, int, Group]] = []
        self._seq = itertools.count()
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._gc_lock = threading.Lock()
        self._frozen = self._unfrozen = time.monotonic()

    def collect(self) -> None:
        """After a tick (in its worker): 1 000 arenas keep ~100 records each, ~1 million
        tracked containers that every full pass of the cyclic GC re-scans (0.5-1.3 s with
        the GIL held: /api/health waited that long). Records die by reference counting."""
        now = time.monotonic()
        with self._gc_lock:
            if now - self._unfrozen >= UNFREEZE_EVERY_S:
                gc.unfreeze()
                gc.collect()
                self._unfrozen = self._frozen = time.monotonic()
            elif now - self._frozen >= FREEZE_EVERY_S:
                freeze_history()
                self._frozen = now

    def shutdown(self) -> None:
        gc.unfreeze()

    # -- membership --------------------------------------------------------------------------
    def key(self, a: Arena, interval_s: float) -> Hashable:
        if self.grouping and not any(s.external for s in a.specs) and a.governor is None:
            return ("game", a.game, interval_s)
        return ("solo", a.arena_id)

    def add(self, lv: LiveArena, interval_ms: float) -> None:
        """Start auto ticks of ``lv`` (running); its first tick comes with its group's next."""
        if lv.arena_id in self.where:
            self.where[lv.arena_id].members.pop(lv.arena_id, None)
        interval_s = interval_ms / 1000.0
        key = self.key(lv.arena, interval_s)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = Group(key, interval_s)
            self._schedule(g)
        g.members[lv.arena_id] = lv
        self.where[lv.arena_id] = g
        lv.set_tick_mode("auto")
        self._ensure_running()

    def auto(self, lv: LiveArena) -> bool:
        return lv.arena_id in self.where

    async def remove(self, lv: LiveArena) -> None:
        """Stop auto ticks of ``lv``; a group tick in flight with it finishes first."""
        g = self.where.pop(lv.arena_id, None)
        lv.set_tick_mode("manual")
        if g is None:
            return
        g.members.pop(lv.arena_id, None)
        if g.task is not None and g.task is not asyncio.current_task():
            await asyncio.gather(asyncio.shield(g.task), return_exceptions=True)
        self._drop_if_empty(g)

    def _drop_if_empty(self, g: Group) -> None:
        if not g.members and g.task is None and self.groups.get(g.key) is g:
            del self.groups[g.key]
            g.close()

    # -- scheduling --------------------------------------------------------------------------
    def _schedule(self, g: Group) -> None:
        heapq.heappush(self._heap, (g.due, next(self._seq), g))
        if self._wake is not None:
            self._wake.set()

    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            self._wake = wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run(wake))

    async def _run(self, wake: asyncio.Event) -> None:
        while True:
            now = time.monotonic()
            while self._heap and self._heap[0][0] <= now:
                _, _, g = heapq.heappop(self._heap)
                if g.task is None and g.members and self.groups.get(g.key) is g:
                    g.start(asyncio.get_running_loop().create_task(self._tick(g)))
            if not self.groups:
                self._heap.clear()
            timeout = self._heap[0][0] - now if self._heap else None
            wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout=timeout)

    async def _tick(self, g: Group) -> None:
        try:
            if g.solo:
                for lv in list(g.members.values()):
                    await self.tick_once(lv)
            else:
                await self._tick_group(g)
        except Exception as exc:  # noqa: BLE001 - auto ticks stop; the owner sees why on the stream
            for lv in list(g.members.values()):
                self.where.pop(lv.arena_id, None)
                lv.set_tick_mode("manual")
                lv.publish("error", {"detail": f"auto tick stopped: {type(exc).__name__}: {exc}"})
            g.members.clear()
        finally:
            for lv in list(g.members.values()):  # ended or closed meanwhile: no more ticks
                if lv.arena.status != "running" or lv.arena.done:
                    g.members.pop(lv.arena_id, None)
                    self.where.pop(lv.arena_id, None)
            g.ticked()
            if g.members:
                self._schedule(g)
            else:
                self._drop_if_empty(g)

    # -- one arena ---------------------------------------------------------------------------
    def step(self, lv: LiveArena) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """One tick of an arena that waits on no one, in a worker thread (its thread lock
        held), with no event loop: the record, and the summary when the game ended with it.
        The arena checks its own status (``Arena.atick``: a ValueError, 409 to a request)."""
        a = lv.arena
        rec = drive(a.atick(start_waiting=False))
        sync_files([records_path(a)])
        out = rec, (a.close() if a.done else None)
        self.collect()
        return out

    async def astep(self, lv: LiveArena, offload: Offload) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """:meth:`step` of an arena that waits on someone, on the server's loop (its locks held,
        ``LiveArena.run_on_loop``); the kernel work through ``offload``."""
        a = lv.arena
        rec = await a.atick(offload, start_waiting=False)
        await self.workers.io(sync_files, [records_path(a)])  # a wait on the disk holds no kernel slot
        out = rec, (await a.aclose(offload) if a.done else None)
        await offload(self.collect)
        return out

    async def tick_once(self, lv: LiveArena) -> dict[str, Any] | None:
        """One tick of ``lv`` alone (a manual tick, or a group of one), published: the record
        built once by the tick, rendered once per role class (``LiveArena.publish``)."""
        if lv.arena.waits:
            rec, summ = await lv.run_on_loop(self.astep, lv)
        else:
            rec, summ = await lv.run(self.step, lv)
        if rec is not None:
            lv.mark_published(rec["turn"])
            lv.publish("tick", rec)
        if summ is not None:
            self.finish(lv, summ)
        return rec

    # -- a group -----------------------------------------------------------------------------
    def _live(self, g: Group) -> list[LiveArena]:
        return sorted(
            (lv for lv in g.members.values() if lv.arena.status == "running" and not lv.arena.done),
            key=lambda lv: lv.arena_id,
        )

    async def _tick_group(self, g: Group) -> None:
        held: list[asyncio.Lock] = []
        try:
            members = sorted(g.members.values(), key=lambda lv: lv.arena_id)
            for lv in members:  # in arena-id order: two holders of several locks cannot deadlock
                await lv.lock.acquire()
                held.append(lv.lock)
            locked = {lv.arena_id for lv in members}  # the members' status, once, as it is now
            lvs = [lv for lv in self._live(g) if lv.arena_id in locked]
            if not lvs:
                return
            async with self.workers.cpu:
                out = await asyncio.get_running_loop().run_in_executor(self.workers.executor, self._group_work, g, lvs)
        finally:
            for lock in held:
                lock.release()
        for k, (lv, rec, summ) in enumerate(out):
            if rec is not None:
                lv.mark_published(rec["turn"])
                lv.publish("tick", rec)
            if summ is not None:
                self.finish(lv, summ)
            if k % PUBLISH_CHUNK == PUBLISH_CHUNK - 1:
                await asyncio.sleep(0)

    def _group_work(self, g: Group, lvs: list[LiveArena]) -> list[tuple[LiveArena, Any, Any]]:
        """In a worker: every member's thread lock, the batch regathered if the members
        changed, ONE batched tick, the finished arenas closed, the records made durable."""
        with ExitStack() as locks:
            for lv in lvs:
                locks.enter_context(lv.thread_lock)
            arenas = [lv.arena for lv in lvs]
            ids = tuple(lv.arena_id for lv in lvs)
            if g.batch is None or ids != g.batch_ids:
                g.batch_for(arenas, ids, [records_path(a) for a in arenas])
            before = [a.turn for a in arenas]
            drive(g.batch.tick())  # built-in players only: nothing to wait on, no event loop
            sync_files(g.paths)
            out = []
            for lv, a, t0 in zip(lvs, arenas, before, strict=True):
                rec = a.records[-1] if a.turn != t0 else None
                out.append((lv, rec, a.close() if a.done else None))
        self.collect()
        return out


__all__ = ["Ticker", "Group", "PUBLISH_CHUNK", "MIN_WIDTH", "batch_width", "records_path"]
