"""A scripted stand-in for the agents' HTTP client (no network): ``post`` answers from a
function of the request, and every request body is kept. Passed as ``Arena(client=...)``.
``run_virtual``: a coroutine run on a virtual clock (rate limits and deadlines without waiting)."""

from __future__ import annotations

import asyncio
import json
import selectors
from collections.abc import Callable
from typing import Any

BASE = "http://llm.test/v1"
OPERATOR = {"llmBaseUrls": [BASE]}


def tool_call(i: int, name: str, arguments: Any) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}


def completion(calls: list[dict[str, Any]], content: str | None = None) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return json.dumps({"choices": [{"index": 0, "message": message}]}).encode()


class FakeClient:
    """``answer(url, request body as JSON) -> bytes | (status, bytes) | Exception``."""

    def __init__(self, answer: Callable[[str, dict[str, Any]], Any]) -> None:
        self.answer = answer
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.peak_in_flight = 0  # the most requests this client held at once

    async def post(
        self, url: str, body: bytes, headers: dict[str, str], timeout_s: float, max_bytes: int
    ) -> tuple[int, bytes]:
        from bdpd_jax.host.agents.transport import TransportError

        req = json.loads(body)
        self.requests.append((url, req))
        self.headers.append(dict(headers))
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0)  # other calls may start meanwhile, as on a wire
        finally:
            self.in_flight -= 1
        out = self.answer(url, req)
        if isinstance(out, Exception):
            raise out
        status, raw = out if isinstance(out, tuple) else (200, out)
        if len(raw) > max_bytes:  # what the real client refuses while reading
            raise TransportError(f"response: body exceeds {max_bytes} bytes")
        return status, raw

    async def aclose(self) -> None:
        pass


class _VirtualSelector(selectors.BaseSelector):
    """A real selector that never blocks: a wait of ``timeout`` seconds with nothing ready
    moves the loop's virtual clock forward by that much instead (``run_virtual``)."""

    def __init__(self) -> None:
        self._real = selectors.DefaultSelector()
        self.now = 0.0

    def register(self, fileobj, events, data=None):  # type: ignore[no-untyped-def]
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj):  # type: ignore[no-untyped-def]
        return self._real.unregister(fileobj)

    def modify(self, fileobj, events, data=None):  # type: ignore[no-untyped-def]
        return self._real.modify(fileobj, events, data)

    def select(self, timeout=None):  # type: ignore[no-untyped-def]
        ready = self._real.select(0)
        if not ready:
            if timeout is None:
                raise RuntimeError("run_virtual: every task waits and no timer is due (a deadlock)")
            self.now += timeout
        return ready

    def get_map(self):  # type: ignore[no-untyped-def]
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()


class _VirtualLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock (``time()``, what ``asyncio.sleep``, timeouts and the LLM
    limiter read) is virtual: it jumps to the next timer whenever every task waits."""

    def __init__(self) -> None:
        self._virtual = _VirtualSelector()
        super().__init__(self._virtual)

    def time(self) -> float:
        return self._virtual.now


def run_virtual(coro: Any) -> Any:
    """Run ``coro`` to its end on a virtual clock: minutes of sleeps and deadlines pass at
    once, in their order (no real waiting); the code under test runs unchanged."""
    with asyncio.Runner(loop_factory=_VirtualLoop) as runner:
        return runner.run(coro)
