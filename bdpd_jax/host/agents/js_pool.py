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
* **Fair between arenas** (issue 23). Every call names its ``owner`` (the arena). Waiting
  calls queue per owner (at most ``max_queued`` each; past that a call fails at once), and a
  free worker goes to the owners in turn (round robin), so an arena with many code players
  cannot take every worker. An owner whose call missed its deadline (the worker was killed)
  is *penalised* for ``penalty_s``: it is served after every unpenalised owner, and the
  penalised owners together hold at most ``size - 1`` workers and never the last idle one, so
  one worker is always left for arenas whose code keeps to its budget. Honest code thus waits at most for one honest
  call per other arena, never for a hostile one (bench/hostile_js_fairness.py). A penalised
  owner's call runs at the lowest CPU priority (``PENALISED_NICE``) and its worker is then
  replaced, so its loops take no core an honest arena's worker wants (issue 35: on 2 cores an
  honest code arena beside 12 killed code players missed deadlines).
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
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, Literal, cast

WORKER = Path(__file__).with_name("js_worker.py")
DEFAULT_SLACK_S: float = 0.010  # on top of the guest's budget: the kill comes ~60 ms after a 50 ms start
MAX_RESULT_BYTES: int = 4 << 20  # an answer larger than this is refused (the worker is killed)
MAX_QUEUED: int = 64  # calls of one owner (arena) waiting for a worker; past it a call fails at once
PENALTY_S: float = 10.0  # an owner whose call was killed for its deadline is served last for this long
#: the CPU priority (nice) of a worker running a penalised owner's call: its loop yields the
#: cores to honest arenas' workers (issue 35), and the worker is retired after the call
PENALISED_NICE: int = 19


class _Ticket:
    """One call waiting for a worker; ``worker`` is set by the dispatcher, which wakes this
    call alone (``cv``, on the pool's lock): a grant never wakes every waiting call, so the
    waiting calls of a hostile arena do not crowd the GIL (issue 35)."""

    __slots__ = ("owner", "worker", "cv")

    def __init__(self, owner: str, lock: Any) -> None:
        self.owner = owner
        self.worker: _Worker | None = None
        self.cv = threading.Condition(lock)

    def grant(self, worker: _Worker) -> None:
        """The dispatcher hands this call its worker (under the pool's lock) and wakes it."""
        self.worker = worker
        self.cv.notify()


class _Worker:
    """One worker process and its pipes; ``ready`` once it wrote its start byte."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-u", str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={},
            close_fds=True,
            start_new_session=True,
        )
        self.stdin, self.stdout = cast(IO[bytes], self.proc.stdin), cast(IO[bytes], self.proc.stdout)  # pipes
        self.ready = False
        self.niced = False  # runs at PENALISED_NICE: never handed to another call

    def lower_priority(self) -> None:
        """Run at :data:`PENALISED_NICE` (a priority cannot be raised back unprivileged: the
        worker is retired after this call)."""
        self.niced = True
        with contextlib.suppress(OSError, AttributeError):  # (gone already; no setpriority off POSIX)
            os.setpriority(os.PRIO_PROCESS, self.proc.pid, PENALISED_NICE)

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

    def __init__(
        self,
        size: int | None = None,
        *,
        slack_s: float = DEFAULT_SLACK_S,
        start_timeout_s: float = 30.0,
        max_queued: int = MAX_QUEUED,
        penalty_s: float = PENALTY_S,
    ) -> None:
        if size is None:
            size = max(2, min(8, os.cpu_count() or 2))
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size: must be an integer >= 1, got {size!r}")
        if not isinstance(slack_s, (int, float)) or not 0 <= slack_s < 10:
            raise ValueError(f"slack_s: must be a number in [0, 10), got {slack_s!r}")
        if isinstance(max_queued, bool) or not isinstance(max_queued, int) or max_queued < 1:
            raise ValueError(f"max_queued: must be an integer >= 1, got {max_queued!r}")
        if isinstance(penalty_s, bool) or not isinstance(penalty_s, (int, float)) or not 0 <= penalty_s < 3600:
            raise ValueError(f"penalty_s: must be a number of seconds in [0, 3600), got {penalty_s!r}")
        self.size = size
        self.max_queued = max_queued
        self.penalty_s = float(penalty_s)
        self.slack_s = float(slack_s)
        self.start_timeout_s = float(start_timeout_s)
        self.kills = 0  # workers killed for a missed deadline or a bad answer (tests, monitoring)
        self._idle: list[_Worker] = []
        self._count = 0
        self._lock = threading.RLock()
        self._cv = threading.Condition(self._lock)  # the pool's state; each waiting call has its own wake-up
        # calls wait in their owner's queue; owners with waiting calls take turns (_dispatch)
        self._queues: dict[str, deque[_Ticket]] = {}
        self._turns: deque[str] = deque()
        self._held: Counter[str] = Counter()  # workers each owner holds now
        self._penalised: dict[str, float] = {}  # owner -> perf_counter time its penalty ends
        # one thread per possible caller: queued calls wait in threads, not in the executor's queue
        self._threads = ThreadPoolExecutor(max_workers=max(size, 64), thread_name_prefix="bdpd-js")
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
            self._dispatch()
        if wait:
            for w in workers:
                w.wait_ready(self.start_timeout_s)

    def penalised(self, owner: str) -> bool:
        """True while ``owner`` is served last (a call of it was killed for its deadline)."""
        with self._cv:
            return self._is_penalised(owner, time.perf_counter())

    def _is_penalised(self, owner: str, now: float) -> bool:
        end = self._penalised.get(owner)
        if end is not None and end <= now:
            del self._penalised[owner]
            return False
        return end is not None

    def _dispatch(self) -> None:
        """Hand idle workers to waiting calls (lock held): owners in turn, unpenalised first;
        penalised owners together hold at most ``size - 1`` workers (all when size is 1) and
        never take the last idle one."""
        now = time.perf_counter()
        while self._idle and self._turns:
            bad_held = sum(n for o, n in self._held.items() if self._is_penalised(o, now))
            pick = None
            for owner in self._turns:  # the first unpenalised owner in turn order
                if not self._is_penalised(owner, now):
                    pick = owner
                    break
            # penalised owners: at most size - 1 workers, and never the last idle one
            if pick is None and (self.size == 1 or (bad_held < self.size - 1 and len(self._idle) >= 2)):
                pick = self._turns[0]
            if pick is None:
                return
            self._turns.remove(pick)
            q = self._queues[pick]
            t = q.popleft()
            if q:
                self._turns.append(pick)  # its next call waits for its next turn
            else:
                del self._queues[pick]
            w = self._idle.pop(self._ready_index())
            if self._is_penalised(pick, now):
                w.lower_priority()
            t.grant(w)
            self._held[pick] += 1

    def _ready_index(self) -> int:
        """An idle worker that has started (a poll, no wait), else the newest: a call given a
        starting worker waits for its start (~0.1 s of CPU)."""
        for i in range(len(self._idle) - 1, -1, -1):
            if self._idle[i].wait_ready(0):
                return i
        return -1

    def _start_workers(self) -> None:
        """Start the missing workers (outside the lock: a start takes a few ms)."""
        with self._cv:
            n = self.size - self._count
            self._count += max(n, 0)
        fresh = [_Worker() for _ in range(max(n, 0))]
        with self._cv:
            if self._closed:
                for w in fresh:
                    w.kill()
                return
            self._idle[:0] = fresh  # starting: taken only when no ready worker is idle
            self._dispatch()

    def _acquire(self, until: float, owner: str = "") -> _Worker | None | Literal["full"]:
        """A worker for ``owner`` before ``until``; None when none came in time, ``"full"``
        when the owner already has ``max_queued`` calls waiting."""
        if self._count < self.size:
            self._start_workers()
        with self._cv:
            if self._closed:
                return None
            q = self._queues.get(owner)
            if q is not None and len(q) >= self.max_queued:
                return "full"
            t = _Ticket(owner, self._lock)
            if q is None:
                q = self._queues[owner] = deque()
                self._turns.append(owner)
            q.append(t)
            self._dispatch()
            while t.worker is None:
                left = until - time.perf_counter()
                if self._closed or left <= 0:
                    q = self._queues.get(owner)
                    if q is not None and t in q:
                        q.remove(t)
                        if not q:
                            del self._queues[owner]
                            self._turns.remove(owner)
                    return None
                t.cv.wait(left)
            return t.worker

    def _release(self, w: _Worker, healthy: bool, owner: str = "", penalise: bool = False) -> None:
        with self._cv:
            self._held[owner] -= 1
            if self._held[owner] <= 0:
                del self._held[owner]
            if not healthy:  # killed and replaced off the caller's path: its answer goes out first
                self.kills += 1
            if penalise:  # the guest's fault (a missed deadline, an answer too large): served last a while
                self._penalised[owner] = time.perf_counter() + self.penalty_s
        if not healthy or w.niced:  # a niced worker is retired too: honest calls get full priority
            w.proc.kill()
            threading.Thread(target=self._replace, args=(w,), daemon=True).start()
            return
        with self._cv:
            if self._closed:
                w.kill()
                return
            self._idle.append(w)
            self._dispatch()

    def _replace(self, dead: _Worker) -> None:
        dead.kill()  # reap it
        fresh = _Worker()
        fresh.wait_ready(self.start_timeout_s)  # idle only once started: no call waits for a start
        with self._cv:
            if self._closed:
                fresh.kill()
                return
            self._idle.insert(0, fresh)  # starting: taken only when no ready worker is idle
            self._dispatch()

    # -- calls ----------------------------------------------------------------------------
    def call(
        self,
        job: dict[str, Any],
        timeout_s: float,
        *,
        queue_timeout_s: float = 10.0,
        submitted: float | None = None,
        owner: str | None = None,
    ) -> dict[str, Any]:
        """Run one job (see js_worker) with the guest's budget ``timeout_s``; blocking.
        ``owner``: the arena the call is for (fairness; None: the shared anonymous owner).

        Returns the worker's answer, or ``{"ok": False, "error": "timeout: ..."}`` when the
        worker missed ``timeout_s + slack_s`` (it is killed) or none was free in time."""
        owner = "" if owner is None else str(owner)
        start = time.perf_counter() if submitted is None else submitted
        w = self._acquire(start + queue_timeout_s, owner) if time.perf_counter() - start < queue_timeout_s else None
        if w == "full":
            return {
                "ok": False,
                "error": f"timeout: {self.max_queued} calls of this arena already wait for a sandbox worker",
            }
        if w is None:
            return {"ok": False, "error": "timeout: no sandbox worker free before the deadline"}
        if not w.wait_ready(max(self.start_timeout_s - (time.perf_counter() - start), 0.0)):
            self._release(w, False, owner)
            return {"ok": False, "error": "worker failure: the sandbox worker did not start"}
        data = json.dumps({**job, "timeout": timeout_s}).encode()
        try:
            w.stdin.write(struct.pack(">I", len(data)) + data)
            w.stdin.flush()
        except (OSError, ValueError):
            self._release(w, False, owner)
            return {"ok": False, "error": "worker failure: the sandbox worker died"}
        deadline = time.perf_counter() + timeout_s + self.slack_s
        fd = w.stdout.fileno()
        head = _read(fd, 4, deadline)
        size = struct.unpack(">I", head)[0] if head is not None else None
        body = _read(fd, size, deadline + 0.05) if size is not None and size <= MAX_RESULT_BYTES else None
        if body is None:  # late, dead, or an answer too large: the worker goes
            self._release(w, False, owner, penalise=True)
            if head is None:
                return {"ok": False, "error": "timeout: script exceeded its time limit (worker killed)"}
            return {"ok": False, "error": f"worker failure: answer over {MAX_RESULT_BYTES} bytes or cut"}
        self._release(w, True, owner)
        try:
            out = json.loads(body)
        except ValueError:
            out = None
        return out if isinstance(out, dict) else {"ok": False, "error": "worker failure: unreadable answer"}

    async def acall(
        self, job: dict[str, Any], timeout_s: float, *, queue_timeout_s: float = 10.0, owner: str | None = None
    ) -> dict[str, Any]:
        """:meth:`call` on the pool's threads: the event loop never waits on JS."""
        loop = asyncio.get_running_loop()
        submitted = time.perf_counter()
        return await loop.run_in_executor(
            self._threads,
            lambda: self.call(job, timeout_s, queue_timeout_s=queue_timeout_s, submitted=submitted, owner=owner),
        )

    def close(self) -> None:
        """Kill every worker; the pool refuses further calls."""
        with self._cv:
            self._closed = True
            idle, self._idle = self._idle, []
            for q in self._queues.values():
                for t in q:
                    t.cv.notify()
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
