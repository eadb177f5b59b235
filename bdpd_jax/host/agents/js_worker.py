"""One sandbox worker process of :class:`~bdpd_jax.host.agents.js_pool.JsPool` (run as a script).

It imports jsbox and the standard library only (no JAX, no bdpd_jax: it starts in ~0.1 s of CPU),
reads jobs from stdin and writes results to stdout, each a 4-byte big-endian length and a JSON
object. A job runs in a *fresh* ``jsbox.Runtime``; ``timeout`` interrupts the interpreter, and
when one native operation overruns it (BigInt arithmetic, an allocation storm, ``normalize``)
the parent kills this process. The parent validates what comes back; this file only evaluates.

Jobs: ``{"op": "decide", script, obs, mem, timeout, memoryLimit, seed}`` ->
``{"ok": true, "kind": typeof h, "value": h (a number; an object as JSON text) or null,
"memory": json}``, and
``{"op": "check", script, timeout, memoryLimit}`` -> ``{"ok": true, "decide": bool}``; any
guest fault -> ``{"ok": false, "error": text}``. The worker writes one byte ``R`` once ready.
"""

from __future__ import annotations

import contextlib
import json
import resource
import struct
import sys
import time

import jsbox

MAX_ERROR_CHARS = 2000  # what crosses the pipe of an error text
ADDRESS_SPACE = 4 << 30  # belt and braces beside QuickJS's own heap limit

# Captured before user code runs, so a guest that clobbers JSON cannot break the harness.
PRELUDE = "globalThis.__bdpd = { P: JSON.parse, S: JSON.stringify };"
SEED_RANDOM = """(function (a) {
  Math.random = function () {
    a |= 0; a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
})(%d);"""
CALL = """(function () {
  const H = globalThis.__bdpd;
  const obs = H.P(__bdpd_obs), memory = H.P(__bdpd_mem);
  if (typeof decide !== 'function') throw new TypeError('decide is not a function');
  const h = decide(obs, memory);
  let m;
  try { m = H.S(memory); } catch (e) { throw new TypeError('memory is not JSON-serialisable: ' + e.message); }
  if (typeof m !== 'string') m = '{}';
  let v = typeof h === 'number' ? h : null;
  if (typeof h === 'object' && h !== null) {  // {harvest, actions}: sent on as JSON text
    try { v = H.S(h); } catch (e) { throw new TypeError('result is not JSON-serialisable: ' + e.message); }
  }
  return [typeof h, v, m];
})()"""


def error_text(exc: BaseException) -> str:
    """``Name: message`` of a JS error (with its first stack frame), or the Python error text."""
    if isinstance(exc, jsbox.JsTimeoutError):
        return "timeout: script exceeded its time limit"
    if isinstance(exc, jsbox.JavaScriptError):
        name = getattr(exc, "name", None) or "Error"
        message = getattr(exc, "message", None) or str(exc).split("\n", 1)[0]
        frames = [
            ln.strip() for ln in str(getattr(exc, "stack", None) or exc).splitlines() if ln.strip().startswith("at ")
        ]
        text = f"{name}: {message}" + (f" ({frames[0]})" if frames else "")
    else:
        text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + f"... ({len(text)} chars)"


_FAULTS = (
    jsbox.JsTimeoutError,
    jsbox.JavaScriptError,
    TypeError,
    ValueError,
    RuntimeError,
    MemoryError,
    OverflowError,
    RecursionError,
)


def run(job: dict) -> dict:
    """Evaluate one job (see the module docstring); never raises on a guest fault."""
    timeout = float(job["timeout"])
    deadline = time.perf_counter() + timeout

    def left() -> float:
        return max(deadline - time.perf_counter(), 1e-4)

    try:
        rt = jsbox.Runtime(memory_limit=int(job["memoryLimit"]))
        if job["op"] == "check":
            rt.eval(job["script"], timeout=left())
            return {"ok": True, "decide": rt.eval("typeof decide", timeout=left()) == "function"}
        rt.bind_object("__bdpd_obs", job["obs"])
        rt.bind_object("__bdpd_mem", job["mem"])
        rt.eval(PRELUDE, timeout=left())
        if job.get("seed") is not None:
            rt.eval(SEED_RANDOM % int(job["seed"]), timeout=left())
        rt.eval(job["script"], timeout=left())
        kind, value, memory = rt.eval(CALL, timeout=left())
    except _FAULTS as exc:
        return {"ok": False, "error": error_text(exc)}
    return {"ok": True, "kind": kind, "value": value, "memory": memory}


def _read_exact(stream, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = stream.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def main() -> None:
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    stdout.write(b"R")
    stdout.flush()
    while True:
        head = _read_exact(stdin, 4)
        if head is None:
            return  # the parent closed the pipe (or died): exit
        body = _read_exact(stdin, struct.unpack(">I", head)[0])
        if body is None:
            return
        try:
            out = json.dumps(run(json.loads(body)))
        except (ValueError, TypeError, KeyError) as exc:  # a malformed job or an unencodable result
            out = json.dumps({"ok": False, "error": f"worker: {type(exc).__name__}: {str(exc)[:200]}"})
        data = out.encode()
        stdout.write(struct.pack(">I", len(data)) + data)
        stdout.flush()


if __name__ == "__main__":
    main()
