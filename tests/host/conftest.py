"""Shared fixtures for the host tests: repo on sys.path, a loopback stub server in a thread, the
system browser for the dashboard tests."""

from __future__ import annotations

import shutil
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


#: Debian's chromium, headless, quiet (no first-run, sync or update traffic)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser():
    """The system chromium driven by Playwright, one per browser test module (skipped where
    either is missing: no browser download)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None and Path("/usr/bin/chromium").is_file():
        exe = "/usr/bin/chromium"
    if exe is None:
        pytest.skip("no chromium found (apt-get install chromium); the browser test needs the system browser")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (test extra)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture(scope="module")
def js_pool():
    """A warm pool of two JS workers shared by a module's code-agent tests."""
    from bdpd_jax.host.agents.js_pool import JsPool

    p = JsPool(2)
    p.warm()
    yield p
    p.close()
