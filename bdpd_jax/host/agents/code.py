"""Sandboxed code agents (spec 004 §A.3.3/§A.4): ``function decide(obs, memory)`` in QuickJS.

How the spec's guarantees are met with ``jsbox`` (QuickJS via rquickjs):

* **Isolation.** Every call runs in a *fresh* ``jsbox.Runtime``: no ``require``, ``process``,
  ``fetch``, timers, filesystem or network exist there, and nothing is bound except two JSON
  strings (observation and memory). Fresh runtimes cost ~0.2 ms and also make calls
  independent of the thread they run on (a Runtime is bound to its creating thread).
* **50 ms wall clock.** ``Runtime.eval(timeout=...)`` interrupts the interpreter; the guest
  cannot catch it. The three evals of a call (prelude, user code, call) share one deadline.
  A single long *native* operation can overshoot that interrupt, so ``decide`` also stops
  waiting ``ASYNC_SLACK_S`` after the worker started the job (queue time is not counted, but
  is capped by ``queue_timeout_s``); a late result is discarded, never committed.
* **Threads vs processes.** jsbox holds the GIL while JS runs, so the default thread pool
  keeps calls serial (at most 50 ms each, like Node's synchronous ``vm``). For parallelism (and to keep a
  crash in the C engine out of the host) pass a ``ProcessPoolExecutor`` (spawn context, warmed by ``warm_executor``:
  a cold worker needs ~1 s to import, far beyond the deadline).
* **Memory.** ``Runtime(memory_limit=...)`` caps the QuickJS heap (default 32 MiB): a huge
  allocation throws ``InternalError: out of memory`` inside the guest -> fallback. The stack is
  capped by jsbox's ``max_stack_size`` default (1 MiB). The serialised memory is capped at
  ``max_memory_bytes`` (default 1 MiB).
* **Private memory with rollback.** ``memory`` lives on the Python side as a JSON string. Each
  call parses it into a fresh object, runs ``decide``, and serialises it back; the new state is
  committed only when the call returns a valid harvest. After a throw, timeout or invalid result
  the memory is the last good state. Memory therefore round-trips through JSON (functions,
  ``undefined`` values and cycles cannot persist; a cycle is an error).
* **Replay.** With ``rng_seed`` set, ``Math.random`` is a seeded mulberry32 stream derived from
  ``(rng_seed, call index)``, so replays are identical. ``Date`` and ``performance.now``
  still read the real clock (jsbox exposes them); strategies using them are not replayable.
* **Result.** Must be a finite number >= 0 (``typeof === 'number'``); anything else, a throw or a
  timeout gives ``0.2 * capacity(w)`` and the error string in ``AgentResult.error``.

The code may be a ``function decide(obs, memory) {...}`` declaration (as in the spec), any
script defining a global ``decide``, or a bare function expression / arrow function.
Syntax errors are rejected at construction with the parser's message (ValueError).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import jsbox

from bdpd_jax.host._json import dumps_compact
from bdpd_jax.host.agents.base import AgentResult, check_wealth, fallback_harvest, valid_harvest

DEFAULT_TIMEOUT_MS: float = 50.0
DEFAULT_MEMORY_LIMIT: int = 32 * 1024 * 1024
DEFAULT_MAX_MEMORY_BYTES: int = 1024 * 1024
ASYNC_SLACK_S: float = 0.25  # extra wait before the loop stops waiting on a wedged worker

_POOL: ThreadPoolExecutor | None = None

# Captured before user code runs, so a guest that clobbers JSON cannot break the harness.
_PRELUDE = "globalThis.__bdpd = { P: JSON.parse, S: JSON.stringify };"
_SEED_RANDOM = """(function (a) {
  Math.random = function () {
    a |= 0; a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
})(%d);"""
_CALL = """(function () {
  const H = globalThis.__bdpd;
  const obs = H.P(__bdpd_obs), memory = H.P(__bdpd_mem);
  if (typeof decide !== 'function') throw new TypeError('decide is not a function');
  const h = decide(obs, memory);
  let m;
  try { m = H.S(memory); } catch (e) { throw new TypeError('memory is not JSON-serialisable: ' + e.message); }
  if (typeof m !== 'string') m = '{}';
  return [typeof h, typeof h === 'number' ? h : null, m];
})()"""


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="bdpd-js")
    return _POOL


def _js_error_text(exc: BaseException) -> str:
    """``Name: message`` for a JS error (first line only), or the Python error text."""
    if isinstance(exc, jsbox.JsTimeoutError):
        return "timeout: script exceeded its time limit"
    if isinstance(exc, jsbox.JavaScriptError):
        name = getattr(exc, "name", None) or "Error"
        message = getattr(exc, "message", None) or str(exc).split("\n", 1)[0]
        frames = [ln.strip() for ln in str(getattr(exc, "stack", None) or exc).splitlines()
                  if ln.strip().startswith("at ")]
        return f"{name}: {message}" + (f" ({frames[0]})" if frames else "")
    return f"{type(exc).__name__}: {exc}"


def _call_seed(rng_seed: int, call_index: int) -> int:
    digest = hashlib.sha256(f"bdpd-js:{rng_seed}:{call_index}".encode()).digest()
    return int.from_bytes(digest[:4], "little", signed=True)


def run_decide(script: str, obs_json: str, mem_json: str, timeout_s: float, memory_limit: int,
               random_seed: int | None, max_memory_bytes: int) -> dict[str, Any]:
    """Run one ``decide`` call in a fresh runtime; picklable, so it works in process pools.

    Returns ``{"ok": True, "harvest": float, "memory": str}`` or ``{"ok": False, "error": str}``.
    """
    deadline = time.perf_counter() + timeout_s
    try:
        rt = jsbox.Runtime(memory_limit=memory_limit)
        rt.bind_object("__bdpd_obs", obs_json)
        rt.bind_object("__bdpd_mem", mem_json)
        rt.eval(_PRELUDE, timeout=timeout_s)
        if random_seed is not None:
            rt.eval(_SEED_RANDOM % random_seed, timeout=timeout_s)
        rt.eval(script, timeout=max(deadline - time.perf_counter(), 1e-4))
        kind, value, memory = rt.eval(_CALL, timeout=max(deadline - time.perf_counter(), 1e-4))
    except (jsbox.JsTimeoutError, jsbox.JavaScriptError, TypeError, ValueError, RuntimeError,
            MemoryError) as exc:
        return {"ok": False, "error": _js_error_text(exc)}
    if kind != "number":
        return {"ok": False, "error": f"invalid result: decide returned {kind}, expected a number"}
    harvest = valid_harvest(value)
    if harvest is None:
        return {"ok": False, "error": f"invalid result: {value!r} (need a finite number >= 0)"}
    if len(memory.encode()) > max_memory_bytes:
        return {"ok": False, "error": f"memory: serialised size exceeds {max_memory_bytes} bytes"}
    try:
        is_object = isinstance(json.loads(memory), dict)
    except json.JSONDecodeError:
        is_object = False
    if not is_object:  # only reachable if the guest tampered with the harness
        return {"ok": False, "error": "memory: did not serialise to a JSON object"}
    return {"ok": True, "harvest": harvest, "memory": memory}


def warm_executor(executor: Executor, n: int) -> None:
    """Start ``n`` workers of a (process) pool before the first turn.

    A cold spawned worker needs ~1 s to import, far beyond the 50 ms deadline; without warming,
    the first turn of every code agent would fall back.
    """
    jobs = [executor.submit(run_decide, "function decide(){return 0}", "{}", "{}", 1.0,
                            DEFAULT_MEMORY_LIMIT, None, DEFAULT_MAX_MEMORY_BYTES) for _ in range(n)]
    for job in jobs:
        job.result(timeout=60)


def compile_strategy(code: str, *, memory_limit: int = DEFAULT_MEMORY_LIMIT,
                     timeout_s: float = DEFAULT_TIMEOUT_MS / 1000.0) -> str:
    """Validate strategy code at join time; return the script that defines global ``decide``.

    Raises ValueError (field ``strategyCode``) with the parser's message on a syntax error, or
    when the code defines no function ``decide``.
    """
    if not isinstance(code, str) or not code.strip():
        raise ValueError(f"strategyCode: must be a non-empty string, got {code!r}")
    checker = jsbox.Runtime(memory_limit=memory_limit)
    candidates: list[str] = []
    first_error: str | None = None
    try:
        checker.check_syntax(code)
        candidates.append(code + "\n;void 0;")  # completion value must convert to Python
    except jsbox.JavaScriptError as exc:
        first_error = _js_error_text(exc)
    wrapped = f"var decide = (\n{code}\n);void 0;"  # bare function expression / arrow function
    try:
        checker.check_syntax(wrapped)
        candidates.append(wrapped)
    except jsbox.JavaScriptError:
        pass
    if not candidates:
        raise ValueError(f"strategyCode: {first_error}")
    for script in candidates:
        rt = jsbox.Runtime(memory_limit=memory_limit)
        try:
            rt.eval(script, timeout=timeout_s)
            if rt.eval("typeof decide", timeout=timeout_s) == "function":
                return script
        except (jsbox.JsTimeoutError, jsbox.JavaScriptError) as exc:
            first_error = first_error or _js_error_text(exc)
    raise ValueError("strategyCode: must define function decide(obs, memory)"
                     + (f" ({first_error})" if first_error else ""))


class CodeAgent:
    """A player whose decisions come from user JavaScript with private, rollback-safe memory.

    Calls on one agent are meant to be sequential (one per turn); memory commits in call order.
    """

    def __init__(self, code: str, *, timeout_ms: float = DEFAULT_TIMEOUT_MS,
                 memory_limit: int = DEFAULT_MEMORY_LIMIT,
                 max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES, rng_seed: int | None = None,
                 executor: Executor | None = None, queue_timeout_s: float = 10.0) -> None:
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float)) or not timeout_ms > 0:
            raise ValueError(f"timeout_ms: must be a number > 0, got {timeout_ms!r}")
        if isinstance(memory_limit, bool) or not isinstance(memory_limit, int) or memory_limit < 1 << 20:
            raise ValueError(f"memory_limit: must be an int >= 1 MiB, got {memory_limit!r}")
        if isinstance(max_memory_bytes, bool) or not isinstance(max_memory_bytes, int) or max_memory_bytes < 2:
            raise ValueError(f"max_memory_bytes: must be an int >= 2, got {max_memory_bytes!r}")
        if rng_seed is not None and (isinstance(rng_seed, bool) or not isinstance(rng_seed, int)):
            raise ValueError(f"rng_seed: must be an int or None, got {rng_seed!r}")
        self.code = code
        self.timeout_s = float(timeout_ms) / 1000.0
        self.memory_limit = memory_limit
        self.max_memory_bytes = max_memory_bytes
        self.rng_seed = rng_seed
        if isinstance(queue_timeout_s, bool) or not isinstance(queue_timeout_s, (int, float)) or not queue_timeout_s > 0:
            raise ValueError(f"queue_timeout_s: must be a number > 0, got {queue_timeout_s!r}")
        self.executor = executor
        self.queue_timeout_s = float(queue_timeout_s)
        self._script = compile_strategy(code, memory_limit=memory_limit, timeout_s=self.timeout_s)
        self._memory_json = "{}"
        self._calls = 0

    @property
    def memory(self) -> dict[str, Any]:
        """A copy of the last committed private memory (for tests / post-hoc analysis only)."""
        return json.loads(self._memory_json)

    def memory_json(self) -> str:
        """The committed memory as JSON text (what a checkpoint would store)."""
        return self._memory_json

    def restore_memory(self, memory_json: str) -> None:
        """Reinstate memory from a checkpoint; must be a JSON object."""
        try:
            ok = isinstance(json.loads(memory_json), dict)
        except (TypeError, json.JSONDecodeError):
            ok = False
        if not ok:
            raise ValueError(f"memory_json: must be a JSON object, got {memory_json!r:.80}")
        self._memory_json = memory_json

    def _job(self, obs: dict[str, Any]) -> tuple[Any, ...]:
        seed = None if self.rng_seed is None else _call_seed(self.rng_seed, self._calls)
        self._calls += 1
        return (self._script, dumps_compact(obs), self._memory_json, self.timeout_s,
                self.memory_limit, seed, self.max_memory_bytes)

    def _finish(self, out: dict[str, Any], wealth: float, t0: float) -> AgentResult:
        elapsed = (time.perf_counter() - t0) * 1000.0
        if out.get("ok"):
            self._memory_json = out["memory"]
            return AgentResult(harvest=out["harvest"], elapsed_ms=elapsed)
        return AgentResult(harvest=fallback_harvest(wealth), error=out["error"],
                           elapsed_ms=elapsed, fallback=True)

    def decide_sync(self, obs: dict[str, Any], wealth: float) -> AgentResult:
        """Blocking decision on the calling thread (the JS deadline still applies)."""
        w = check_wealth(wealth)
        t0 = time.perf_counter()
        try:
            job = self._job(obs)
        except (TypeError, ValueError) as exc:
            return self._finish({"ok": False, "error": f"obs: not serialisable ({exc})"}, w, t0)
        return self._finish(run_decide(*job), w, t0)

    async def decide(self, obs: dict[str, Any], wealth: float) -> AgentResult:
        """Decide off the event loop; never raises on guest faults, never waits unboundedly.

        The guard deadline runs from when a worker *starts* the job (thread executors), so a
        call queued behind other agents is not failed for time it spent waiting; queueing
        itself is bounded by ``queue_timeout_s``.
        """
        w = check_wealth(wealth)
        t0 = time.perf_counter()
        try:
            job = self._job(obs)
        except (TypeError, ValueError) as exc:
            return self._finish({"ok": False, "error": f"obs: not serialisable ({exc})"}, w, t0)
        loop = asyncio.get_running_loop()
        executor = self.executor or _pool()
        marker = _StartMarker()
        if isinstance(executor, ThreadPoolExecutor):
            fut = loop.run_in_executor(executor, _timed_run, marker, job)
        else:  # process pools cannot report the start: count from submission
            marker.t = t0
            fut = loop.run_in_executor(executor, run_decide, *job)
        out: dict[str, Any] = {"ok": False, "error": "timeout: worker did not return before the deadline"}
        while True:
            started = marker.t
            limit = t0 + self.queue_timeout_s if started is None else started + self.timeout_s + ASYNC_SLACK_S
            remaining = min(limit, t0 + self.queue_timeout_s + self.timeout_s + ASYNC_SLACK_S) - time.perf_counter()
            if remaining <= 0:
                if started is None:
                    out = {"ok": False, "error": "timeout: no sandbox worker free before the deadline"}
                break  # wedged or starved worker: a late result is never committed
            done, _ = await asyncio.wait({fut}, timeout=min(remaining, 0.02) if started is None else remaining)
            if done:
                try:
                    out = fut.result()
                except Exception as exc:  # broken process pool, pickling error...
                    out = {"ok": False, "error": f"worker failure: {type(exc).__name__}: {exc}"}
                break
        if not fut.done():
            fut.cancel()  # drops it if still queued; a running job finishes and is ignored
        return self._finish(out, w, t0)


class _StartMarker:
    """When a thread worker picked up a job (perf_counter seconds), None while queued."""

    __slots__ = ("t",)

    def __init__(self) -> None:
        self.t: float | None = None


def _timed_run(marker: _StartMarker, job: tuple[Any, ...]) -> dict[str, Any]:
    marker.t = time.perf_counter()
    return run_decide(*job)


__all__ = ["CodeAgent", "compile_strategy", "run_decide", "warm_executor"]
