"""Sandboxed code agents (spec 004 §A.3.3/§A.4): ``function decide(obs, memory)`` in QuickJS.

How the spec's guarantees are met with ``jsbox`` (QuickJS via rquickjs):

* **Isolation.** Every call runs in a *fresh* ``jsbox.Runtime`` inside a worker process of a
  :class:`~bdpd_jax.host.agents.js_pool.JsPool`: no ``require``, ``process``, ``fetch``,
  timers, filesystem or network exist there, and nothing is bound except two JSON strings
  (observation and memory). The worker has an empty environment.
* **50 ms wall clock that holds.** ``Runtime.eval(timeout=...)`` interrupts the interpreter
  (the guest cannot catch it); the evals of a call share one deadline. One long *native*
  operation (BigInt arithmetic, an allocation storm, ``normalize``) can overrun that interrupt
  by seconds, so the host waits for the worker at most ``timeout + slack`` (10 ms) after
  handing the job over and then kills and replaces it. The host never runs guest code in its
  own process, so no JS call holds the event loop or another arena. Time queued for a free
  worker is not counted against the guest (bounded by ``queue_timeout_s``).
* **Memory.** ``Runtime(memory_limit=...)`` caps the QuickJS heap (default 32 MiB): a huge
  allocation throws ``InternalError: out of memory`` inside the guest -> fallback. The stack is
  capped by jsbox's ``max_stack_size`` default (1 MiB). The serialised memory is capped at
  ``max_memory_bytes`` (default 1 MiB).
* **Private memory with rollback.** ``memory`` lives on the host side as a JSON string. Each
  call parses it into a fresh object, runs ``decide``, and serialises it back; the new state is
  committed only when the call returns a valid harvest. After a throw, timeout (a killed worker
  included) or invalid result the memory is the last good state. Memory therefore round-trips
  through JSON (functions, ``undefined`` values and cycles cannot persist; a cycle is an error).
* **Replay.** With ``rng_seed`` set, ``Math.random`` is a seeded mulberry32 stream derived from
  ``(rng_seed, call index)``, so replays are identical. ``Date`` and ``performance.now``
  still read the real clock (jsbox exposes them); strategies using them are not replayable.
* **Result.** A finite number >= 0 (``typeof === 'number'``, the seed's form), or an object
  ``{harvest, actions?, announced?}`` read by the HTTP players' rule
  (:func:`~bdpd_jax.host.agents.http.parse_response`: the tools, ``sanction`` included, each
  action validated on its own; at most ``MAX_RESULT_CHARS`` of JSON). Anything else, a throw or
  a timeout gives ``0.2 * capacity(w)`` and the error string in ``AgentResult.error``.

The code may be a ``function decide(obs, memory) {...}`` declaration (as in the spec), any
script defining a global ``decide``, or a bare function expression / arrow function.
Syntax errors are rejected at construction with the parser's message (ValueError); the
script's top level is then run once in a worker (under the same deadline) to check that it
defines ``decide``.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import jsbox

from bdpd_jax.host.agents.base import AgentResult, check_wealth, fallback_harvest, join_errors, valid_harvest
from bdpd_jax.host.agents.http import MAX_RESPONSE_BYTES, parse_response
from bdpd_jax.host.agents.js_pool import JsPool, default_pool
from bdpd_jax.host.agents.js_worker import error_text
from bdpd_jax.host.jsonio import dumps_compact

DEFAULT_TIMEOUT_MS: float = 50.0
DEFAULT_MEMORY_LIMIT: int = 32 * 1024 * 1024
DEFAULT_MAX_MEMORY_BYTES: int = 1024 * 1024
MAX_RESULT_CHARS: int = MAX_RESPONSE_BYTES  # an object result, as JSON (an HTTP player's answer cap)


def _call_seed(rng_seed: int, call_index: int) -> int:
    digest = hashlib.sha256(f"bdpd-js:{rng_seed}:{call_index}".encode()).digest()
    return int.from_bytes(digest[:4], "little", signed=True)


def check_answer(out: dict[str, Any], max_memory_bytes: int, *, no_talk: bool = False) -> dict[str, Any]:
    """A worker's raw answer -> ``{"ok": True, "harvest", "actions", "errors", "memory"}`` or
    ``{"ok": False, "error"}``."""
    if not out.get("ok"):
        return {"ok": False, "error": str(out.get("error"))}
    kind, value, memory = out.get("kind"), out.get("value"), out.get("memory")
    actions: list[Any] = []
    errors: list[str] = []
    if kind == "object":  # {harvest, actions?, announced?}: the HTTP players' answer
        if not isinstance(value, str) or len(value) > MAX_RESULT_CHARS:
            return {"ok": False, "error": f"invalid result: an object over {MAX_RESULT_CHARS} chars of JSON"}
        try:
            body = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return {"ok": False, "error": "invalid result: not a JSON object"}
        harvest, actions, errors = parse_response(body, no_talk=no_talk)
        if harvest is None:
            return {"ok": False, "error": "invalid result: " + "; ".join(errors)}
    elif kind != "number":
        return {
            "ok": False,
            "error": f"invalid result: decide returned {kind}, expected a number or {{harvest, actions}}",
        }
    else:
        harvest = valid_harvest(value)
    if harvest is None:
        return {"ok": False, "error": f"invalid result: {value!r:.40} (need a finite number >= 0)"}
    if not isinstance(memory, str) or len(memory.encode()) > max_memory_bytes:
        return {"ok": False, "error": f"memory: serialised size exceeds {max_memory_bytes} bytes"}
    try:
        is_object = isinstance(json.loads(memory), dict)
    except (json.JSONDecodeError, RecursionError):
        is_object = False
    if not is_object:  # only reachable if the guest tampered with the harness
        return {"ok": False, "error": "memory: did not serialise to a JSON object"}
    return {"ok": True, "harvest": harvest, "actions": actions, "errors": errors, "memory": memory}


def _syntax_candidates(code: str, memory_limit: int) -> tuple[list[str], str | None]:
    """The forms of ``code`` that parse (as written, or as a bare function expression) and the
    parser's first message. The checking runtime is dropped here, in this thread: jsbox
    runtimes may not be freed on another thread, which a traceback cycle reaching this frame
    would otherwise do at some later cyclic GC."""
    checker = jsbox.Runtime(memory_limit=memory_limit)
    candidates: list[str] = []
    first_error: str | None = None
    try:
        try:
            checker.check_syntax(code)
            candidates.append(code + "\n;void 0;")  # completion value must convert to Python
        except jsbox.JavaScriptError as exc:
            first_error = error_text(exc)
        wrapped = f"var decide = (\n{code}\n);void 0;"  # bare function expression / arrow function
        try:
            checker.check_syntax(wrapped)
            candidates.append(wrapped)
        except jsbox.JavaScriptError:
            pass
    finally:
        del checker
    return candidates, first_error


def compile_strategy(
    code: str,
    *,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    timeout_s: float = DEFAULT_TIMEOUT_MS / 1000.0,
    pool: JsPool | None = None,
) -> str:
    """Validate strategy code at join time; return the script that defines global ``decide``.

    Raises ValueError (field ``strategyCode``) with the parser's message on a syntax error, or
    when the code defines no function ``decide``. Parsing happens here; running the top level
    happens in a worker process, under the deadline.
    """
    if not isinstance(code, str) or not code.strip():
        raise ValueError(f"strategyCode: must be a non-empty string, got {code!r:.80}")
    candidates, first_error = _syntax_candidates(code, memory_limit)
    if not candidates:
        raise ValueError(f"strategyCode: {first_error}")
    pool = pool or default_pool()
    for script in candidates:
        out = pool.call({"op": "check", "script": script, "memoryLimit": memory_limit}, timeout_s)
        if out.get("ok") and out.get("decide"):
            return script
        if not out.get("ok"):
            first_error = first_error or str(out.get("error"))
    raise ValueError(
        "strategyCode: must define function decide(obs, memory)" + (f" ({first_error})" if first_error else "")
    )


class CodeAgent:
    """A player whose decisions come from user JavaScript with private, rollback-safe memory.

    Calls on one agent are meant to be sequential (one per turn); memory commits in call order.
    """

    def __init__(
        self,
        code: str,
        *,
        timeout_ms: float = DEFAULT_TIMEOUT_MS,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
        max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES,
        rng_seed: int | None = None,
        pool: JsPool | None = None,
        queue_timeout_s: float = 10.0,
        no_talk: bool = False,
        owner: str | None = None,
    ) -> None:
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
        if (
            isinstance(queue_timeout_s, bool)
            or not isinstance(queue_timeout_s, (int, float))
            or not queue_timeout_s > 0
        ):
            raise ValueError(f"queue_timeout_s: must be a number > 0, got {queue_timeout_s!r}")
        if pool is not None and not isinstance(pool, JsPool):
            raise ValueError(f"pool: must be a JsPool or None, got {type(pool).__name__}")
        self.pool = pool or default_pool()
        self.queue_timeout_s = float(queue_timeout_s)
        self.no_talk = bool(no_talk)  # an object result's talk actions are dropped (the HTTP rule)
        self.owner = None if owner is None else str(owner)  # the arena: the pool shares workers fairly by it
        self._script = compile_strategy(code, memory_limit=memory_limit, timeout_s=self.timeout_s, pool=self.pool)
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

    def _job(self, obs: dict[str, Any]) -> dict[str, Any]:
        seed = None if self.rng_seed is None else _call_seed(self.rng_seed, self._calls)
        self._calls += 1
        return {
            "op": "decide",
            "script": self._script,
            "obs": dumps_compact(obs),
            "mem": self._memory_json,
            "memoryLimit": self.memory_limit,
            "seed": seed,
        }

    def _finish(self, out: dict[str, Any], wealth: float, t0: float) -> AgentResult:
        out = check_answer(out, self.max_memory_bytes, no_talk=self.no_talk)
        elapsed = (time.perf_counter() - t0) * 1000.0
        if out["ok"]:
            self._memory_json = out["memory"]
            return AgentResult(
                harvest=out["harvest"], error=join_errors(out["errors"]), actions=out["actions"], elapsed_ms=elapsed
            )
        return AgentResult(harvest=fallback_harvest(wealth), error=out["error"], elapsed_ms=elapsed, fallback=True)

    def _begin(self, obs: dict[str, Any], wealth: float) -> tuple[float, float, Any, AgentResult | None]:
        """The checked wealth, the start time, the job for the pool, or the fallback when ``obs``
        cannot be sent (the same for the blocking and the async call)."""
        w = check_wealth(wealth)
        t0 = time.perf_counter()
        try:
            return w, t0, self._job(obs), None
        except (TypeError, ValueError) as exc:
            return w, t0, None, self._finish({"ok": False, "error": f"obs: not serialisable ({exc})"}, w, t0)

    def decide_sync(self, obs: dict[str, Any], wealth: float) -> AgentResult:
        """Blocking decision (the calling thread waits; the JS runs in a worker process)."""
        w, t0, job, refused = self._begin(obs, wealth)
        if refused is not None:
            return refused
        return self._finish(
            self.pool.call(job, self.timeout_s, queue_timeout_s=self.queue_timeout_s, owner=self.owner), w, t0
        )

    async def decide(self, obs: dict[str, Any], wealth: float) -> AgentResult:
        """Decide without blocking the event loop; never raises on guest faults, never waits
        past ``queue_timeout_s`` + the deadline + the pool's slack."""
        w, t0, job, refused = self._begin(obs, wealth)
        if refused is not None:
            return refused
        out = await self.pool.acall(job, self.timeout_s, queue_timeout_s=self.queue_timeout_s, owner=self.owner)
        return self._finish(out, w, t0)


__all__ = ["CodeAgent", "check_answer", "compile_strategy"]
