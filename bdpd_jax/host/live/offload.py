"""Where a tick's CPU-bound work runs: ``offload(fn, *args)`` returns ``fn(*args)``.

A live tick awaits its players on an event loop and calls the kernels (the jitted phases, the
tool writes, the records) in between. It hands each piece of kernel work to an ``offload``:
:func:`inline` (the default: run it here, as a script's tick or a tick with no event loop
does) or the server's (``server.live.Workers.offload``: a worker thread, awaited from the
server's one event loop, so a compile or a step never holds up the loop; docs/semantics/live/arena.md
"One event loop").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

#: ``await offload(fn, *args)`` is ``fn(*args)``, run wherever the caller chose
Offload = Callable[..., Awaitable[Any]]


async def inline(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` right here (never suspends, so it also runs under ``batch_runner.drive``)."""
    return fn(*args)


__all__ = ["Offload", "inline"]
