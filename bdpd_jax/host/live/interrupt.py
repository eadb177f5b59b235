"""``Interrupt``: ending an arena's waits on its players early, when its owner closes or deletes it.

A tick of an arena with external players waits on them: the harvest answers (each up to the
arena's ``agentTimeout``) and the discussion (up to its ``deadlineMs``). ``POST /close`` and
``DELETE`` must not wait behind that (issue 35): while one is pending (:meth:`Interrupt.pending`,
a count, so two owner requests at once both hold it), every such wait of the tick in flight
ends at once -- a harvest not yet answered is the fallback, with the error
``INTERRUPTED``, and the discussion ends where it is (``cut: "interrupted"``). The turn is then
complete and recorded as usual, so the folder replays as always; the close or delete runs next.

Only a tick on an event loop waits (``timed``): one that waits on no one (built-in and scripted
players) runs with no loop and ends by itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from bdpd_jax.host.agents.base import ConversationCut

T = TypeVar("T")

#: the error of a harvest or utterance that the owner's close or delete cut short
INTERRUPTED: str = "interrupted: the owner closed or deleted the arena during the turn"


class Interrupt:
    """The owner requests that want one arena's tick in flight to stop waiting (see module)."""

    def __init__(self) -> None:
        self._pending = 0
        self._stop: asyncio.Future[None] | None = None  # done once an interrupt is pending

    @property
    def pending(self) -> bool:
        return self._pending > 0

    @contextmanager
    def holding(self) -> Iterator[None]:
        """While the block runs (a close or a delete), the arena's waits end at once."""
        self._pending += 1
        if self._stop is not None and not self._stop.done():
            self._stop.set_result(None)
        try:
            yield
        finally:
            self._pending -= 1
            if not self._pending:
                self._stop = None  # the next tick waits again

    def _stopped(self) -> asyncio.Future[None]:
        """The future a wait races against (one per interrupt and loop: a plain future, no
        task, so a tick of many players adds no task per player for it)."""
        loop = asyncio.get_running_loop()
        if self._stop is None or self._stop.get_loop() is not loop:
            self._stop = loop.create_future()
        return self._stop

    async def race(self, coro: Coroutine[Any, Any, T], stopped: Callable[[], T]) -> T:
        """``coro``'s result, or ``stopped()`` (``coro`` cancelled) once an interrupt is pending.
        Call it on an event loop only."""
        if self.pending:
            coro.close()
            return stopped()
        stop = self._stopped()
        task = asyncio.ensure_future(coro)
        first = task.get_loop().create_future()  # done when either is (asyncio.wait's part, ~5x less CPU)

        def wake(_: object) -> None:
            if not first.done():
                first.set_result(None)

        task.add_done_callback(wake)
        stop.add_done_callback(wake)
        try:
            await first
        except BaseException:  # cancelled (e.g. by a deadline): the call goes too
            task.cancel()
            raise
        finally:
            stop.remove_done_callback(wake)  # (the shared future keeps no callback per call)
            task.remove_done_callback(wake)
        if task.done():
            return task.result()
        task.cancel()
        return stopped()

    async def within(self, coro: Coroutine[Any, Any, T], end: float) -> T:
        """``coro``'s result before ``time.monotonic()`` reaches ``end`` and while no interrupt
        is pending, else :class:`ConversationCut` (``deadline`` / ``interrupted``). Call it on
        an event loop only."""
        if self.pending:
            coro.close()
            raise ConversationCut("interrupted")
        left = end - time.monotonic()
        if left <= 0:
            coro.close()
            raise ConversationCut("deadline")

        def cut() -> T:
            raise ConversationCut("interrupted")

        try:
            return await asyncio.wait_for(self.race(coro, cut), left)
        except TimeoutError:
            raise ConversationCut("deadline") from None


__all__ = ["INTERRUPTED", "Interrupt"]
