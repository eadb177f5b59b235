"""Live-arena host: cheap-talk bus, agent runners (code / HTTP / LLM), tool schemas, persistence.

``arena.Arena`` / ``live_batch.LiveBatch`` tie these pieces to the kernel step (one live
arena, or many in lockstep); ``registry.PactRegistry`` views the kernel pact table;
``replay.replay`` rebuilds an arena from its folder; ``server.create_app`` serves the
004_* A.2 HTTP API. Import submodules directly (``bdpd_jax.host.messages`` etc.) so that importing
the package stays cheap.
"""

from __future__ import annotations

__all__ = [
    "messages",
    "persist",
    "tools",
    "agents",
    "arena",
    "live_batch",
    "registry",
    "replay",
    "players",
    "programs",
    "server",
]
