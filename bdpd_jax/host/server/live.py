"""``LiveArena``: one served arena -- its Arena, keys, tick worker and SSE subscribers.

Kernel work (start, ticks with their first compile, perturbations, close) runs in a worker
thread, never on the event loop: the Arena's ``tick()`` / ``close()`` run there, without an
event loop for built-in players, else on the arena's own loop (its HTTP clients bind to it).
An ``asyncio.Lock`` serialises one arena's work; different arenas run in parallel threads.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

from bdpd_jax.host._json import plain_json
from bdpd_jax.host.arena import Arena
from bdpd_jax.host.persist import read_jsonl
from bdpd_jax.host.replay import turn_records
from bdpd_jax.host.server import views

#: events a subscriber may have queued before it is dropped (a client that stops reading)
QUEUE_LIMIT = 256


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
    return f"event: {event}\ndata: {json.dumps(plain_json(data), separators=(',', ':'))}\n\n"


class Subscriber:
    """One SSE client: a bounded queue; ``full`` when dropped (its last event says so)."""

    def __init__(self, role: str, limit: int = QUEUE_LIMIT) -> None:
        self.role = role
        self.queue: asyncio.Queue[str | None] = asyncio.Queue(maxsize=limit + 1)
        self.limit = limit
        self.dropped = False

    def put(self, msg: str | None) -> bool:
        """Queue ``msg`` (None ends the stream); False once the client has been dropped."""
        if self.dropped:
            return False
        if msg is not None and self.queue.qsize() >= self.limit:
            self.dropped = True
            self.queue.put_nowait(sse("dropped", {"reason": f"client too slow: {self.limit} events queued"}))
            return False
        self.queue.put_nowait(msg)
        return True


class Workers:
    """The threads that run arena work. Kernel-bound work (builtin and code players) runs at
    most ``cpu`` at a time: it is Python-heavy around the kernel calls and holds the GIL, and
    every extra runnable thread lengthens the event loop's wait for it (GIL convoy). Ticks
    that mostly wait on HTTP / LLM players take threads of their own (up to ``threads``)."""

    def __init__(self, cpu: int = 2, threads: int = 64) -> None:
        if cpu < 1:
            raise ValueError(f"workers: must be >= 1, got {cpu!r}")
        self.executor = ThreadPoolExecutor(max_workers=max(threads, cpu), thread_name_prefix="bdpd-arena")
        self.cpu = asyncio.Semaphore(cpu)

    def gate(self, arena: Arena):
        waits = any(s.agentType in ("http", "llm") for s in arena.specs)
        return nullcontext() if waits else self.cpu

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


class LiveArena:
    """One served arena; ``role_of`` maps a presented key to owner / spectator / player."""

    def __init__(self, arena: Arena, workers: Workers, hashes: dict[str, str]) -> None:
        self.arena = arena
        self.workers = workers
        self.hashes = dict(hashes)  # role -> SHA-256 of its key (the keys themselves are not kept)
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

    # -- events ------------------------------------------------------------------------------
    def publish(self, event: str, data: dict[str, Any]) -> None:
        """Send ``event`` to every subscriber, each in the view its role may see."""
        cache: dict[bool, str] = {}
        for sub in list(self.subscribers):
            full = sub.role in ("owner", "spectator")
            if full not in cache:
                cache[full] = sse(event, data if full else views.public_event(event, data))
            if not sub.put(cache[full]):
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

    def init_event(self, role: str) -> dict[str, Any]:
        """The ``init`` event: status and the compact history of every past tick."""
        full = role in ("owner", "spectator")
        base = self.owner() if full else self.public()
        base.pop("meta", None)
        base.pop("lastTick", None)
        recs = [r for r in self.history() if r["turn"] <= self.published]
        return {**base, "history": [views.compact_tick(r) if full else views.public_tick(r) for r in recs]}


__all__ = ["LiveArena", "Workers", "Subscriber", "key_hash", "new_keys", "role_of", "sse", "QUEUE_LIMIT"]
