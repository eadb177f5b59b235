"""``SyncLoop``: how the sync calls of a live object (``tick()`` / ``run()`` / ``close()`` of an
:class:`~bdpd_jax.host.live.arena.Arena` or a :class:`~bdpd_jax.host.live.live_batch.LiveBatch`) run
their coroutines (``atick`` / ``arun`` / ``aclose``) to the end.

A tick that waits on no one (built-in and scripted players, no governance agent or a scripted
one) never suspends and runs with no event loop at all (:func:`~bdpd_jax.host.live.batch_runner.drive`).
One that waits on someone runs on the loop of this sync caller, made on first use and kept
(the HTTP clients bind to it), and only where no loop is running, so that it is the process's
one loop (docs/semantics/live/arena.md "One event loop"). Inside a running loop the caller awaits
``atick`` / ``arun`` / ``aclose`` instead: a second loop would bind the clients away from the
caller's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Protocol, TypeVar

from bdpd_jax.host.live.batch_runner import drive

T = TypeVar("T")


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


__all__ = ["SyncLoop", "Ticking", "run_to_end"]
