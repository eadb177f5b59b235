"""The HTTP API of 004_* A.2 over live arenas (FastAPI), and the web dashboard.

``create_app(root)`` serves arenas whose folders live under ``root`` (``root/<arenaId>/``:
auth.json, meta.json, turns.jsonl, summary.json). ``bdpd serve`` runs it with uvicorn.

* Auth (004_* A.2, :mod:`.deps`): the owner key (``X-Owner-Key``) administers, the arena key
  (``X-Arena-Key``) joins, the spectator token (``X-Spectator-Token`` or ``?token=``) streams.
  What each role sees: :mod:`.views`.
* Kernel work runs in worker threads, one arena's work serialised (:mod:`.live`), so the
  event loop (health, streams, other arenas) never waits for a tick or a compile. It is the
  process's one loop: players and governance agents are awaited on it (:mod:`.live`).
* Auto ticks are scheduled by the hub's :class:`~.ticker.Ticker`: arenas sharing a compiled
  game and an interval are ticked in groups, one batched kernel call per phase per tick.
* Requests and responses are pydantic models (:mod:`.models`); errors are one-line JSON
  (:mod:`.errors`); request bodies are capped before parsing.
* ``/`` and ``/arenas/{id}``: the dashboard (:mod:`.web`); ``/docs``: the API reference,
  rendered from ``/openapi.json`` with no CDN.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import bdpd_jax  # (light: loads nothing heavy)

# The server is an entry point (``python -m bdpd_jax.host.server``, ``uvicorn --factory
# bdpd_jax.host.server:app_from_env``): the process settings come before the imports below
# reach jax and equinox. Imported into a program that loaded them already, it only sets what
# is unset (no warning: that program's own settings are its choice).
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    bdpd_jax.configure()

from fastapi import FastAPI  # noqa: E402
from fastapi.middleware.cors import CORSMiddleware  # noqa: E402

from bdpd_jax.host.agents.js_pool import default_pool  # noqa: E402
from bdpd_jax.host.live.operator import Operator  # noqa: E402
from bdpd_jax.host.live.persist import clean_stale_tmp  # noqa: E402
from bdpd_jax.host.server import (  # noqa: E402
    errors,
    routes_arenas,
    routes_compare,
    routes_create,
    routes_dashboard,
    routes_export,
    routes_fork,
    routes_read,
    web,
)
from bdpd_jax.host.server.store import Hub  # noqa: E402


def create_app(
    root: str | Path = "arenas",
    operator: Operator | dict | None = None,
    *,
    cors: Sequence[str] = (),
    no_talk: bool = False,
    max_body_bytes: int = errors.MAX_BODY_BYTES,
    workers: int = 2,
    group_ticks: bool = True,
) -> FastAPI:
    """The API app; arenas persist under ``root``.

    operator: the LLM credentials and endpoints joining players may use
    (:class:`~bdpd_jax.host.live.operator.Operator`; default none). cors: allowed origins (``["*"]`` for any).
    no_talk: the default of ``noTalk`` for new arenas. max_body_bytes: the request body limit (413
    above it). workers: kernel-bound arena work running at once (``live.Workers``; ticks waiting
    on HTTP / LLM players are not counted). group_ticks: auto-ticking arenas of built-in players
    that share a compiled game and an interval are ticked together, one batched kernel call per
    phase (:mod:`.ticker`)."""
    app = FastAPI(
        title="BDPD Arena (bdpd_jax live host)",
        version="1",
        docs_url=None,
        redoc_url=None,
        description="004_* A.2 over JAX kernels. Keys: X-Owner-Key, X-Arena-Key, X-Spectator-Token.",
    )
    operator = operator if isinstance(operator, Operator) else Operator.model_validate(operator or {})
    clean_stale_tmp(Path(root))
    default_pool().warm(wait=False)  # code agents' JS workers start now, not at the first join
    hub = Hub(root, workers=workers, no_talk=no_talk, operator=operator, group_ticks=group_ticks)
    app.state.hub = hub
    app.state.arenas = hub.live
    errors.install(app)
    app.include_router(routes_compare.router)  # (before /api/arenas/{id})
    app.include_router(routes_create.router)
    app.include_router(routes_read.router)
    app.include_router(routes_arenas.router)
    app.include_router(routes_dashboard.router)
    app.include_router(routes_fork.router)
    app.include_router(routes_export.router)
    app.include_router(web.router)
    app.add_middleware(errors.BodyLimit, max_bytes=max_body_bytes)
    if cors:
        app.add_middleware(
            CORSMiddleware, allow_origins=list(cors), allow_methods=["*"], allow_headers=["*"], expose_headers=["*"]
        )
    app.router.on_shutdown.append(hub.shutdown)
    return app


def app_from_env() -> FastAPI:
    """``uvicorn --factory bdpd_jax.host.server:app_from_env`` (root from ``BDPD_ARENAS_DIR``; the
    operator's JSON file of LLM credentials and allowed endpoints from ``BDPD_OPERATOR``)."""
    path = os.environ.get("BDPD_OPERATOR")
    return create_app(os.environ.get("BDPD_ARENAS_DIR", "arenas"), Operator.load(path) if path else None)


__all__ = ["create_app", "app_from_env"]
