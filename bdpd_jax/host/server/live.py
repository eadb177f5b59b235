"""``LiveArena``: one served arena -- its Arena, keys, tick worker and SSE subscribers.

One event loop per process, the server's (docs/semantics/live/arena.md "One event loop"). Kernel
work (start, ticks with their first compile, perturbations, close) never runs on it:

* an arena that waits on no one (built-in and scripted players) ticks and closes in a worker
  thread, with no event loop (:meth:`LiveArena.run`);
* an arena that waits on someone (code, HTTP, LLM players, an HTTP or LLM governance agent)
  ticks and closes as a coroutine on the server's loop (:meth:`LiveArena.run_on_loop`), so its
  HTTP clients and deadlines live there; the kernel work between the waits goes to a worker
  thread (:meth:`Workers.offload`).

An ``asyncio.Lock`` (and a thread lock) serialises one arena's work; different arenas run in
parallel.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

import orjson

from bdpd_jax.host.jsonio import json_default
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.persist import read_jsonl
from bdpd_jax.host.live.replay import turn_records
from bdpd_jax.host.live.sync_loop import Offload
from bdpd_jax.host.server import views

#: events a subscriber may have queued before it is dropped (a client that stops reading)
QUEUE_LIMIT = 256
#: how often work on the loop retries an arena's thread lock that a cancelled request's worker holds
THREAD_LOCK_POLL_S = 0.005


def key_hash(key: str) -> str:
    """What the server keeps on disk of a key (auth.json): its SHA-256."""
    return hashlib.sha256(key.encode()).hexdigest()


def new_keys() -> dict[str, str]:
    """Fresh random keys of an arena: role -> key (004_* A.2 prefixes)."""
    return {
        "owner": "owner_" + secrets.token_urlsafe(18),
        "player": "arena_" + secrets.token_urlsafe(18),
        "spectator": "spec_" + secrets.token_urlsafe(18),
    }


def role_of(hashes: dict[str, str], *keys: str | None) -> str | None:
    """The strongest role among the presented ``keys`` (owner > spectator > player), or None."""
    given = {key_hash(k) for k in keys if k}
    for role in ("owner", "spectator", "player"):
        if hashes.get(role) in given:
            return role
    return None


def sse(event: str, data: Any) -> str:
    """One SSE event: ``data`` as compact JSON in one orjson pass (non-finite floats -> null,
    numpy values through ``json_default``, non-string keys as strings, as ``plain_json`` did)."""
    text = orjson.dumps(data, default=json_default, option=orjson.OPT_NON_STR_KEYS).decode()
    return f"event: {event}\ndata: {text}\n\n"


class Subscriber:
    """One SSE client: a bounded queue; ``full`` when dropped (its last event says so).
    ``held``: its events wait (as many as its queue takes) until :meth:`open` gives the first
    one (``init``, built off the loop while the subscriber already receives the ticks after it)."""

    def __init__(self, role: str, limit: int = QUEUE_LIMIT, *, held: bool = False) -> None:
        self.role = role
        self.queue: asyncio.Queue[str | None] = asyncio.Queue(maxsize=limit + 1)
        self.limit = limit
        self.dropped = False
        self._held: list[str | None] | None = [] if held else None

    def open(self, first: str) -> None:
        """Queue ``first``, then the events held until now."""
        held, self._held = self._held or [], None
        if self.dropped:  # it overflowed while held: its init, then why it ends
            self.queue.put_nowait(first)
            self.queue.put_nowait(held[-1])
            return
        for msg in [first, *held]:
            if not self.put(msg):
                return

    def put(self, msg: str | None) -> bool:
        """Queue ``msg`` (None ends the stream); False once the client has been dropped."""
        if self.dropped:
            return False
        if self._held is not None:
            if len(self._held) >= self.limit:
                self.dropped = True  # too many events while its init was built: dropped as a slow one
                self._held.append(sse("dropped", {"reason": f"client too slow: {self.limit} events queued"}))
                return False
            self._held.append(msg)
            return True
        if msg is not None and self.queue.qsize() >= self.limit:
            self.dropped = True
            self.queue.put_nowait(sse("dropped", {"reason": f"client too slow: {self.limit} events queued"}))
            return False
        self.queue.put_nowait(msg)
        return True


class Workers:
    """The threads that run arena work. Kernel-bound work runs at most ``cpu`` at a time: it
    is Python-heavy around the kernel calls and holds the GIL, and every extra runnable thread
    lengthens the event loop's wait for it (GIL convoy). That is a whole tick of an arena that
    waits on no one (:meth:`gate`), and the kernel pieces of a tick on the loop
    (:meth:`offload`), whose waits on players hold no thread and no slot."""

    def __init__(self, cpu: int = 2, threads: int = 64) -> None:
        if cpu < 1:
            raise ValueError(f"workers: must be >= 1, got {cpu!r}")
        self.executor = ThreadPoolExecutor(max_workers=max(threads, cpu), thread_name_prefix="bdpd-arena")
        self.cpu = asyncio.Semaphore(cpu)

    def gate(self, arena: Arena):
        """What a sync call of ``arena`` in a worker holds: a ``cpu`` slot, except the calls of
        an arena that waits for its players (``Arena.waits``, the one rule: its ticks run on the
        loop, so join, start and perturb are no kernel-bound tick)."""
        return nullcontext() if arena.waits else self.cpu

    async def offload(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a worker thread under a ``cpu`` slot, awaited from the server's loop:
        the kernel work of a tick on the loop (an :data:`~bdpd_jax.host.live.sync_loop.Offload`)."""
        async with self.cpu:
            return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def io(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a worker thread holding no ``cpu`` slot: a wait on the disk (an
        fsync of a tick's lines) that other arenas' kernel work must not queue behind (issue 35)."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


class LiveArena:
    """One served arena; ``role_of`` maps a presented key to owner / spectator / player."""

    private_text: bool = False  # the owner let spectators read private messages' text (set at create)

    def __init__(self, arena: Arena, workers: Workers, hashes: dict[str, str], private_text: bool = False) -> None:
        self.arena = arena
        self.workers = workers
        self.hashes = dict(hashes)  # role -> SHA-256 of its key (the keys themselves are not kept)
        self.private_text = private_text
        self.lock = asyncio.Lock()
        self.thread_lock = threading.Lock()
        self.subscribers: set[Subscriber] = set()
        self.tick_mode = "manual"  # "auto" while the hub's Ticker ticks it
        # the last turn sent to the streams (init shows the ticks up to it)
        self.published = arena.records[-1]["turn"] if arena.records else 0

    @property
    def arena_id(self) -> str:
        return self.arena.arena_id

    def set_tick_mode(self, mode: str) -> None:
        """``"auto"`` while the hub's Ticker ticks this arena, else ``"manual"``."""
        if mode not in ("auto", "manual"):
            raise ValueError(f"tickMode: must be 'auto' or 'manual', got {mode!r}")
        self.tick_mode = mode

    def mark_published(self, turn: int) -> None:
        """Record that the streams have been sent every tick up to ``turn``."""
        self.published = int(turn)

    @property
    def status(self) -> str:
        return self.arena.status

    def role_of(self, *keys: str | None) -> str | None:
        return role_of(self.hashes, *keys)

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a worker thread, serialised with this arena's other work (the
        thread lock holds even if the awaiting request is cancelled mid-call)."""

        def locked():
            with self.thread_lock:
                return fn(*args)

        async with self.lock, self.workers.gate(self.arena):
            return await asyncio.get_running_loop().run_in_executor(self.workers.executor, locked)

    async def run_on_loop(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """``await fn(*args, offload)`` on the server's loop (``offload``: :meth:`Workers.offload`),
        serialised with this arena's other work. Once it holds the arena's lock it runs as a task
        of its own, to its end, holding the locks throughout: a request cancelled while it runs
        only stops waiting for it (a tick completes or never starts), and nothing else touches
        the arena meanwhile."""
        await self.lock.acquire()  # cancelled while waiting: nothing ran
        try:
            task = asyncio.get_running_loop().create_task(self._locked(fn, args, self.workers.offload))
        except BaseException:
            self.lock.release()
            raise
        task.add_done_callback(_retrieved)
        return await asyncio.shield(task)

    async def _locked(self, fn: Callable[..., Awaitable[Any]], args: tuple, offload: Offload) -> Any:
        """``fn`` under the thread lock too (a cancelled request's worker may still hold it);
        both locks released at the end."""
        try:
            while not self.thread_lock.acquire(blocking=False):
                await asyncio.sleep(THREAD_LOCK_POLL_S)
            try:
                return await fn(*args, offload)
            finally:
                self.thread_lock.release()
        finally:
            self.lock.release()

    async def close(self) -> dict[str, Any]:
        """Close the arena (summary.json and meta.json; its clients closed on the loop they use)."""
        if self.arena.waits:
            return await self.run_on_loop(self.arena.aclose)
        return await self.run(self.arena.close)

    # -- events ------------------------------------------------------------------------------
    def publish(self, event: str, data: dict[str, Any]) -> None:
        """Send ``event`` to every subscriber, each in the view its role may see."""
        cache: dict[str, str] = {}
        for sub in list(self.subscribers):
            view = views.view_of(sub.role, self.private_text)
            if view not in cache:
                cache[view] = sse(event, views.event_for(view, event, data))
            if not sub.put(cache[view]):
                self.subscribers.discard(sub)

    def end_streams(self) -> None:
        for sub in list(self.subscribers):
            sub.put(None)
        self.subscribers.clear()

    # -- views -------------------------------------------------------------------------------
    def public(self) -> dict[str, Any]:
        return views.public_view(self.arena)

    def owner(self) -> dict[str, Any]:
        return views.owner_view(self.arena)

    def history(self) -> list[dict[str, Any]]:
        """Every tick record so far: the arena keeps only its last ``keep_records`` in memory,
        so a persisted arena's history is read back from its turns.jsonl."""
        recs = list(self.arena.records)
        if self.arena.out_dir is not None and (not recs or recs[0]["turn"] > 1):
            recs = turn_records(read_jsonl(self.arena.out_dir / "turns.jsonl"))
        return recs

    def init_event(self, role: str, upto: int | None = None) -> dict[str, Any]:
        """The ``init`` event: status and the compact history of every past tick (up to turn
        ``upto``, default the last published one). Reads turns.jsonl when the arena keeps only
        its last records: call it in a worker thread."""
        view = views.view_of(role, self.private_text)
        full = view != "public"
        base = self.owner() if full else self.public()
        base.pop("meta", None)
        base.pop("lastTick", None)
        if view == "spectator" and "messages" in base:
            base["messages"] = [views.hide_private(m) for m in base["messages"]]
        last = self.published if upto is None else upto
        recs = [r for r in self.history() if r["turn"] <= last]
        return {**base, "history": [views.compact_tick(r, view) if full else views.public_tick(r) for r in recs]}


def _retrieved(task: asyncio.Task) -> None:
    """A task whose awaiting request went away: its error is that request's, not the loop's."""
    if not task.cancelled():
        task.exception()


__all__ = ["LiveArena", "Workers", "Subscriber", "key_hash", "new_keys", "role_of", "sse", "QUEUE_LIMIT"]
