"""``bdpd serve``: every check (options, the host extra, the operator file, the port) comes
before anything is created or announced; then the app is built and uvicorn serves it."""

from __future__ import annotations

import gc
import socket
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ._env import enable_compile_cache
from .cli_errors import message


def check_port(host: str, port: int) -> None:
    """Raise ValueError naming --port when ``host:port`` cannot be listened on now (in use, or
    not allowed), so that the command fails before it announces or creates anything."""
    if not 0 < port < 65536:
        raise ValueError(f"--port: must be in 1..65535, got {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as e:
        raise ValueError(f"--host: cannot listen on {host!r}: {e.strerror or e}") from None
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            s.bind(addr)
        except OSError as e:
            raise ValueError(f"--port: cannot listen on {host}:{port}: {e.strerror or e}") from None


def serve(
    host: str,
    port: int,
    arenas: Path,
    cors: list[str] | None,
    no_talk: bool,
    workers: int,
    switch_ms: float,
    group_ticks: bool,
    operator: Path | None,
) -> None:
    """Check everything, then build the app and serve it (blocks until stopped)."""
    if not 0.05 <= switch_ms <= 100:
        raise ValueError(f"--switch-ms: must be in [0.05, 100], got {switch_ms}")
    if workers < 1:
        raise ValueError(f"--workers: must be >= 1, got {workers}")
    if arenas.exists() and not arenas.is_dir():
        raise ValueError(f"--arenas: {str(arenas)!r} is not a folder")
    import uvicorn  # optional dependency: the host extra (a missing one is a one-line error)

    from bdpd_jax.host.live.operator import Operator  # the host extra (aiohttp, jsbox)
    from bdpd_jax.host.server import create_app  # the host extra (FastAPI)

    try:
        op = Operator.load(operator) if operator is not None else None
    except ValueError as e:  # (pydantic's errors too: one line each, with the valid keys)
        raise ValueError(f"--operator {str(operator)!r}: {message(e)}") from None
    check_port(host, port)
    sys.setswitchinterval(switch_ms / 1000.0)
    enable_compile_cache()
    try:
        app_ = create_app(arenas, op, cors=tuple(cors or ()), no_talk=no_talk, workers=workers, group_ticks=group_ticks)
    except (OSError, ValueError) as e:  # an arenas folder that cannot be made or read
        raise ValueError(f"--arenas: {type(e).__name__}: {e}") from None
    # what start-up made (modules, JAX, the app: ~250k objects) is never scanned again by the
    # cyclic GC, whose full passes hold the GIL, and so every arena's tick, ~150 ms (issue 35)
    gc.collect()
    gc.freeze()
    Console().print(escape(f"bdpd serve: http://{host}:{port}/  (arenas in {arenas}/, API docs at /docs)"))
    uvicorn.run(app_, host=host, port=port, log_level="warning")
