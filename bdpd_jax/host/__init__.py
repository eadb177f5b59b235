"""Live host in three parts: ``live`` (the arena, its lockstep batch, records, replay,
persistence, discussion), ``agents`` (the players: code, HTTP, LLM) and ``server`` (the 004_*
A.2 HTTP API, ``server.create_app``); imports go ``server`` -> ``live`` -> ``agents``, and
``player_kinds`` and ``jsonio`` sit beside them. Import submodules directly
(``bdpd_jax.host.live.arena`` etc.) so that importing the package stays cheap.
"""

from __future__ import annotations

__all__ = ["live", "agents", "server"]
