"""Shared fixtures for the host tests: repo on sys.path, a loopback stub server in a thread."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
for _p in (ROOT, HERE):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from host_stub_server import STATE, build_app, dead_port  # noqa: E402,F401


class LiveServer:
    """A uvicorn server on 127.0.0.1 (pre-bound socket, so no port race) in a daemon thread."""

    def __init__(self) -> None:
        import uvicorn

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            build_app(),
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=0.3,
            limit_concurrency=1000,
            backlog=512,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("stub server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)
        self.sock.close()


@pytest.fixture(scope="session")
def live_server() -> Iterator[LiveServer]:
    srv = LiveServer()
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture()
def stub_state() -> Iterator[dict]:
    """The stub's recorded requests, cleared around each test."""
    STATE["requests"].clear()
    STATE["auth"].clear()
    yield STATE
    STATE["requests"].clear()
    STATE["auth"].clear()
