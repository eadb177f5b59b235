"""Where a live tick runs: its kernel work through an ``offload``, the tick itself with no
event loop (:func:`drive`) or on its caller's one (:class:`SyncLoop`).

``await offload(fn, *args)`` is ``fn(*args)``: a live tick awaits its players on an event loop
and hands each piece of kernel work in between (the jitted phases, the tool writes, the
records) to an offload, :func:`inline` (the default: run it here, as a script's tick or a tick
with no event loop does) or the server's (``server.live.Workers.offload``: a worker thread,
awaited from the server's one event loop, so a compile or a step never holds up the loop).

``SyncLoop``: how the sync calls of a live object (``tick()`` / ``run()`` / ``close()`` of an
:class:`~bdpd_jax.host.live.arena.Arena` or a :class:`~bdpd_jax.host.live.live_batch.LiveBatch`) run
their coroutines (``atick`` / ``arun`` / ``aclose``) to the end. A tick that waits on no one
(built-in and scripted players, no governance agent or a scripted one) never suspends and runs
with no event loop at all (:func:`drive`); its awaits of many players at once go through
:func:`each`, which awaits them in turn when none can wait.
One that waits on someone runs on the loop of this sync caller, made on first use and kept
(the HTTP clients bind to it), and only where no loop is running, so that it is the process's
one loop (docs/semantics/live/arena.md "One event loop"). Inside a running loop the caller awaits
``atick`` / ``arun`` / ``aclose`` instead: a second loop would bind the clients away from the
caller's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

#: ``await offload(fn, *args)`` is ``fn(*args)``, run wherever the caller chose
Offload = Callable[..., Awaitable[Any]]


async def inline(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` right here (never suspends, so it also runs under :func:`drive`)."""
    return fn(*args)


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end without an event loop. For a tick that waits on no one (built-in
    players only, no governance agent: ``LockstepBatch.waits`` False): it never suspends, so
    it needs no loop of its own. RuntimeError if it does suspend."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("drive: the coroutine waited on something; run it on an event loop")


class SyncLoop:
    """The event loop of one sync caller (``owner`` names it in errors); see the module docstring."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self._loop: asyncio.AbstractEventLoop | None = None

    def drive(self, coro: Coroutine[Any, Any, T], waits: bool) -> T:
        """``coro`` to its end: without an event loop when it ``waits`` on no one, else on this
        caller's loop (:meth:`run`)."""
        if not waits:
            return drive(coro)
        return self.run(coro)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """``coro`` on this caller's loop; ValueError (and ``coro`` closed) inside a running loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            name = getattr(coro, "__name__", "atick")  # atick, arun or aclose
            coro.close()
            raise ValueError(
                f"{self.owner}: called inside a running event loop; await {self.owner}.{name}() there "
                "(one event loop per process: tick/run/close make one only outside any loop)"
            )
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None


class Ticking(Protocol):
    """What :func:`run_to_end` drives: an Arena or a LiveBatch."""

    @property
    def done(self) -> bool: ...

    async def atick(self) -> Any: ...

    async def aclose(self) -> Any: ...

    def summary(self) -> Any: ...


async def run_to_end(live: Ticking, max_ticks: int | None) -> Any:
    """Tick ``live`` until its game is over (or ``max_ticks``), then close it: its summary
    (``arun`` of an Arena and of a LiveBatch)."""
    k = 0
    while not live.done and (max_ticks is None or k < max_ticks):
        await live.atick()
        k += 1
    return await live.aclose() if live.done else live.summary()


async def each(jobs: list[Coroutine[Any, Any, T]], at_once: bool) -> list[T]:
    """The results of ``jobs``, in order: run at once (``asyncio.gather``) when ``at_once`` (some
    may wait), else one after the other (none suspends, so none needs an event loop:
    ``sync_loop.drive``)."""
    if at_once and jobs:
        return list(await asyncio.gather(*jobs))
    return [await job for job in jobs]


__all__ = ["Offload", "SyncLoop", "Ticking", "drive", "each", "inline", "run_to_end"]
