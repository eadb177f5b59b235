"""Auth as one dependency: ``Depends(access("owner"))`` resolves the arena and the caller's role.

Keys (004_* A.2): ``X-Owner-Key`` (owner), ``X-Spectator-Token`` or ``?token=`` (spectator;
``EventSource`` cannot set headers), ``X-Arena-Key`` (player). The strongest role presented
wins; a route names the roles it admits, and the owner is admitted everywhere. Only the
spectator token counts in a query string (URLs end up in logs and browser history): an owner
or arena key given as ``?token=`` is ignored. Keys and ids are bounded (``MAX_KEY_CHARS``,
``MAX_ID_CHARS``: 422 past them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, HTTPException, Path, Query, Request

from bdpd_jax.config.limits import MAX_ID_CHARS, MAX_KEY_CHARS
from bdpd_jax.host.server.live import LiveArena
from bdpd_jax.host.server.store import DiskArena, Hub

ROLES = ("owner", "spectator", "player", "public")
#: the arena id of a route's path, a key header, the spectator token's query parameter
ArenaId = Annotated[str, Path(max_length=MAX_ID_CHARS)]
KeyHeader = Annotated[str | None, Header(max_length=MAX_KEY_CHARS)]
TokenQuery = Annotated[str | None, Query(max_length=MAX_KEY_CHARS)]


@dataclass
class Access:
    arena: LiveArena | DiskArena
    role: str  # owner | spectator | player | public

    @property
    def live(self) -> LiveArena:
        """The live arena (409 when it is closed or interrupted)."""
        if not isinstance(self.arena, LiveArena):
            raise HTTPException(409, f"status: the arena is {self.arena.status!r}")
        return self.arena


def hub_of(request: Request) -> Hub:
    return request.app.state.hub


_HINT = {
    "owner": "X-Owner-Key: missing or wrong owner key",
    "player": "X-Arena-Key: missing or wrong arena key",
    "spectator": "token: a spectator token, arena key or owner key is required",
}


def access(*roles: str):
    """A dependency admitting callers whose role is one of ``roles`` ('public' admits anyone)."""

    def dep(
        arena_id: ArenaId,
        hub: Hub = Depends(hub_of),
        token: TokenQuery = None,
        x_owner_key: KeyHeader = None,
        x_arena_key: KeyHeader = None,
        x_spectator_token: KeyHeader = None,
    ) -> Access:
        arena = hub.find(arena_id)
        if arena is None:
            raise HTTPException(404, f"arenaId: no arena {arena_id!r}")
        if token is not None and arena.role_of(token) != "spectator":
            token = None  # an owner or arena key in a URL is not a credential
        role = arena.role_of(x_owner_key, x_spectator_token, token, x_arena_key) or "public"
        if role not in roles and role != "owner" and "public" not in roles:
            raise HTTPException(403, _HINT["spectator" if "spectator" in roles else roles[0]])
        return Access(arena, role)

    return dep


__all__ = ["Access", "access", "hub_of", "ROLES", "ArenaId", "KeyHeader", "TokenQuery"]
