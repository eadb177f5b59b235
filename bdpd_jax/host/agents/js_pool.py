"""``JsPool``: code agents' JavaScript runs in worker processes the host can kill (issue 14).

QuickJS's interrupt stops an interpreted loop at its deadline, but not one long native
operation (BigInt multiplication, an allocation storm, ``String.prototype.normalize``: 0.4-3 s
measured for a 50 ms budget). So every call runs in a separate process
(:mod:`~bdpd_jax.host.agents.js_worker`), and the host waits for the answer at most
``timeout + slack_s`` after handing the job over; a worker that misses that is killed
(SIGKILL) and replaced. Nothing in the host waits on JS with the GIL held: the event loop and
other arenas stay free whatever the code does.

* Calls are blocking (:meth:`call`) or awaitable (:meth:`acall`, on the pool's own threads,
  one per worker). A worker serves one job at a time.
* Time spent queueing for a free worker is not the guest's (as before: a player is not failed
  for other players' code), but is bounded by ``queue_timeout_s``.
* Workers start lazily, in the background; a killed one is replaced at once. They get an
  empty environment (no operator secrets) and a 4 GiB address-space cap on top of QuickJS's
  heap limit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import select
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, cast

WORKER = Path(__file__).with_name("js_worker.py")
DEFAULT_SLACK_S: float = 0.010  # on top of the guest's budget: the kill comes ~60 ms after a 50 ms start
MAX_RESULT_BYTES: int = 4 << 20  # an answer larger than this is refused (the worker is killed)


class _Worker:
    """One worker process and its pipes; ``ready`` once it wrote its start byte."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-P", "-u", str(WORKER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={},
                                     close_fds=True, start_new_session=True)
        self.stdin, self.stdout = cast(IO[bytes], self.proc.stdin), cast(IO[bytes], self.proc.stdout)  # pipes
        self.ready = False

    def wait_ready(self, timeout_s: float) -> bool:
        if not self.ready:
            fd = self.stdout.fileno()
            if select.select([fd], [], [], max(timeout_s, 0))[0]:
                self.ready = os.read(fd, 1) == b"R"
        return self.ready

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        for f in (self.stdin, self.stdout):
            with contextlib.suppress(OSError):
                f.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


def _read(fd: int, n: int, deadline: float) -> bytes | None:
    """``n`` bytes from ``fd`` before ``deadline`` (perf_counter), else None (EOF or late)."""
    buf = bytearray()
    while len(buf) < n:
        left = deadline - time.perf_counter()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


class JsPool:
    """A pool of killable JS worker processes. ``call(job, timeout_s)`` / ``await acall(...)``."""

    def __init__(self, size: int | None = None, *, slack_s: float = DEFAULT_SLACK_S,
                 start_timeout_s: float = 30.0) -> None:
        if size is None:
            size = max(2, min(8, os.cpu_count() or 2))
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size: must be an integer >= 1, got {size!r}")
        if not isinstance(slack_s, (int, float)) or not 0 <= slack_s < 10:
            raise ValueError(f"slack_s: must be a number in [0, 10), got {slack_s!r}")
        self.size = size
        self.slack_s = float(slack_s)
        self.start_timeout_s = float(start_timeout_s)
        self.kills = 0  # workers killed for a missed deadline or a bad answer (tests, monitoring)
        self._idle: list[_Worker] = []
        self._count = 0
        self._cv = threading.Condition()
        self._threads = ThreadPoolExecutor(max_workers=size, thread_name_prefix="bdpd-js")
        self._closed = False

    # -- workers --------------------------------------------------------------------------
    def warm(self, wait: bool = True) -> None:
        """Start every worker now (else the first calls pay their start, ~0.1-1 s); with
        ``wait``, until all are ready. A server calls ``warm(wait=False)`` at start-up."""
        with self._cv:
            while self._count < self.size:
                self._idle.append(_Worker())
                self._count += 1
            workers = list(self._idle)
        if wait:
            for w in workers:
                w.wait_ready(self.start_timeout_s)

    def _acquire(self, until: float) -> _Worker | None:
        with self._cv:
            while not self._idle:
                if self._closed:
                    return None
                if self._count < self.size:
                    self._count += 1
                    self._cv.release()
                    try:
                        return _Worker()
                    finally:
                        self._cv.acquire()
                left = until - time.perf_counter()
                if left <= 0 or not self._cv.wait(left):
                    return None
            return self._idle.pop()

    def _release(self, w: _Worker, healthy: bool) -> None:
        if not healthy:  # killed and replaced off the caller's path: its answer goes out first
            self.kills += 1
            w.proc.kill()
            threading.Thread(target=self._replace, args=(w,), daemon=True).start()
            return
        with self._cv:
            if self._closed:
                w.kill()
                return
            self._idle.append(w)  # ready workers are taken from the end
            self._cv.notify()

    def _replace(self, dead: _Worker) -> None:
        dead.kill()  # reap it
        fresh = _Worker()
        with self._cv:
            if self._closed:
                fresh.kill()
                return
            self._idle.insert(0, fresh)  # starting: taken only when no ready worker is idle
            self._cv.notify()

    # -- calls ----------------------------------------------------------------------------
    def call(self, job: dict[str, Any], timeout_s: float, *, queue_timeout_s: float = 10.0,
             submitted: float | None = None) -> dict[str, Any]:
        """Run one job (see js_worker) with the guest's budget ``timeout_s``; blocking.

        Returns the worker's answer, or ``{"ok": False, "error": "timeout: ..."}`` when the
        worker missed ``timeout_s + slack_s`` (it is killed) or none was free in time."""
        start = time.perf_counter() if submitted is None else submitted
        w = self._acquire(start + queue_timeout_s) if time.perf_counter() - start < queue_timeout_s else None
        if w is None:
            return {"ok": False, "error": "timeout: no sandbox worker free before the deadline"}
        if not w.wait_ready(max(self.start_timeout_s - (time.perf_counter() - start), 0.0)):
            self._release(w, False)
            return {"ok": False, "error": "worker failure: the sandbox worker did not start"}
        data = json.dumps({**job, "timeout": timeout_s}).encode()
        try:
            w.stdin.write(struct.pack(">I", len(data)) + data)
            w.stdin.flush()
        except (OSError, ValueError):
            self._release(w, False)
            return {"ok": False, "error": "worker failure: the sandbox worker died"}
        deadline = time.perf_counter() + timeout_s + self.slack_s
        fd = w.stdout.fileno()
        head = _read(fd, 4, deadline)
        size = struct.unpack(">I", head)[0] if head is not None else None
        body = _read(fd, size, deadline + 0.05) if size is not None and size <= MAX_RESULT_BYTES else None
        if body is None:  # late, dead, or an answer too large: the worker goes
            self._release(w, False)
            if head is None:
                return {"ok": False, "error": "timeout: script exceeded its time limit (worker killed)"}
            return {"ok": False, "error": f"worker failure: answer over {MAX_RESULT_BYTES} bytes or cut"}
        self._release(w, True)
        try:
            out = json.loads(body)
        except ValueError:
            out = None
        return out if isinstance(out, dict) else {"ok": False, "error": "worker failure: unreadable answer"}

    async def acall(self, job: dict[str, Any], timeout_s: float, *, queue_timeout_s: float = 10.0) -> dict[str, Any]:
        """:meth:`call` on the pool's threads: the event loop never waits on JS."""
        loop = asyncio.get_running_loop()
        submitted = time.perf_counter()
        return await loop.run_in_executor(self._threads, lambda: self.call(
            job, timeout_s, queue_timeout_s=queue_timeout_s, submitted=submitted))

    def close(self) -> None:
        """Kill every worker; the pool refuses further calls."""
        with self._cv:
            self._closed = True
            idle, self._idle = self._idle, []
            self._cv.notify_all()
        for w in idle:
            w.kill()
        self._threads.shutdown(wait=False)


_DEFAULT: JsPool | None = None
_DEFAULT_LOCK = threading.Lock()


def default_pool() -> JsPool:
    """The process-wide pool code agents use unless given one (closed at exit)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = JsPool()
            atexit.register(_DEFAULT.close)
        return _DEFAULT


__all__ = ["JsPool", "default_pool"]
