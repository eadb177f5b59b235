"""A scripted stand-in for the agents' HTTP client (no network): ``post`` answers from a
function of the request, and every request body is kept. Passed as ``Arena(client=...)``."""

from __future__ import annotations

import asyncio
import json
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
