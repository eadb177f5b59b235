"""The loopback HTTP endpoint of the live benches: a separate process on raw asyncio streams
(it shares neither the bench's GIL nor its CPU clock, and costs ~50 us of CPU a request, so a
bench measures the host, not the endpoint). It keeps connections alive, reads each request's
head and body, waits ``delay_ms``, then answers with one kind of body:

- ``harvest``: an HTTP player's decision, ``{"harvest": 0.1 x myCapacity}`` (bench/live.py);
- ``chat``: an OpenAI-compatible completion with one ``harvest`` tool call of 2 units (a
  sustainable catch: the fishery lasts the year) and a ``usage`` (bench/llm_scale.py).

    proc, url = start("harvest", delay_ms=5.0, path="/decide")   # then proc.kill()

Run as a script it is the endpoint itself: ``python bench/loopback.py PORT DELAY_MS KIND``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

_CHAT = json.dumps(
    {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c0", "type": "function", "function": {"name": "harvest", "arguments": '{"amount": 2}'}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 900, "completion_tokens": 12},
    }
).encode()


def _harvest(body: bytes) -> bytes:
    obs = json.loads(body) if body else {}
    return json.dumps({"harvest": 0.1 * (obs.get("myCapacity") or 1.0)}).encode()


#: what the endpoint answers, by kind: the response body from the request body
ANSWERS: dict[str, Callable[[bytes], bytes]] = {"harvest": _harvest, "chat": lambda body: _CHAT}


async def _serve(port: int, delay_s: float, answer: Callable[[bytes], bytes]) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                n = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        n = int(line.split(b":", 1)[1])
                body = await reader.readexactly(n) if n else b""
                await asyncio.sleep(delay_s)
                out = answer(body)
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                    + str(len(out)).encode()
                    + b"\r\n\r\n"
                    + out
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()


def start(kind: str, delay_ms: float, path: str) -> tuple[subprocess.Popen, str]:
    """The endpoint's process, answering ``kind`` after ``delay_ms``, and its URL ending in
    ``path``, once it accepts connections (RuntimeError after 30 s)."""
    if kind not in ANSWERS:
        raise ValueError(f"kind: one of {sorted(ANSWERS)}, got {kind!r}")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), str(port), str(delay_ms), kind])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}{path}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"loopback: the {kind!r} endpoint did not start")


if __name__ == "__main__":
    asyncio.run(_serve(int(sys.argv[1]), float(sys.argv[2]) / 1000.0, ANSWERS[sys.argv[3]]))
