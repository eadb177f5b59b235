"""Helpers of the server tests: a uvicorn server in a thread, SSE reading, small payloads."""

from __future__ import annotations

import copy
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from payloads import SEED_LOGISTIC

from bdpd_jax.host.server import create_app


@contextmanager
def serve(root, port: int = 0, **kw) -> Iterator[str]:
    """A uvicorn server of ``create_app(root, **kw)`` on loopback (``port`` 0: any free one, or
    a given one, e.g. a restart on the port of a server that stopped); yields its base URL."""
    import uvicorn

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(root, **kw), log_level="warning", lifespan="off", timeout_graceful_shutdown=0.3, backlog=1024
        )
    )
    th = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    th.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        th.join(timeout=5)
        sock.close()


def payload(max_turns: int = 4, players: int = 2, **model: Any) -> dict[str, Any]:
    """The seed's logistic payload, short, with ``players`` builtins."""
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update({"maxTurns": max_turns, "minPlayers": 2, **model})
    cfg["players"] = [
        {"strategy": s, "name": f"b{k}"}
        for k, s in zip(range(players), ["conservative", "aggressive", "adaptive", "random"] * 4, strict=False)
    ]
    return {**cfg, "seed": 3}


def parse_sse(lines) -> Iterator[tuple[str, dict]]:
    ev = None
    for line in lines:
        if line.startswith("event: "):
            ev = line[7:]
        elif line.startswith("data: "):
            yield ev, json.loads(line[6:])


def read_stream(
    client: httpx.Client, path: str, headers: dict | None = None, until: str | None = None, max_events: int = 10_000
) -> list[tuple[str, dict]]:
    """Every event of a stream until it ends (or ``until`` arrives)."""
    out = []
    with client.stream("GET", path, headers=headers or {}) as s:
        assert s.status_code == 200, s.read()
        for ev in parse_sse(s.iter_lines()):
            out.append(ev)
            if ev[0] == until or len(out) >= max_events:
                break
    return out


def keys_of(created: dict[str, Any]) -> tuple[dict, dict, dict]:
    return (
        {"X-Owner-Key": created["ownerKey"]},
        {"X-Arena-Key": created["arenaKey"]},
        {"X-Spectator-Token": created["spectatorToken"]},
    )
