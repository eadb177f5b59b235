"""How a live arena reaches its players: config players as specs, one external decision."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from bdpd_jax.config.game import PlayerConfig
from bdpd_jax.host.agents.base import AgentResult, fallback_harvest
from bdpd_jax.host.agents.http import make_client
from bdpd_jax.host.live.players import LivePlayerConfig
from bdpd_jax.host.player_kinds import PlayerKind

T = TypeVar("T")


def live_player_config_of(i: int, p: PlayerConfig) -> LivePlayerConfig:
    if not isinstance(p.strategy, str):
        raise ValueError(f"players[{i}].strategy: a live arena needs built-in strategy names, got {p.strategy!r}")
    return LivePlayerConfig(
        agent_type="builtin",
        name=p.name or f"p{i}",
        private_resource=p.private_resource,
        active_from=p.active_from,
        strategy=p.strategy,
        intensity=p.intensity,
        reduction_factor=p.reduction_factor,
        talk=None if p.talk is None else p.talk.model_dump(mode="json"),
    )


def own_client(specs: list[LivePlayerConfig], n_players: int):
    """A new HTTP client for an arena of ``n_players`` when some of ``specs`` calls out (HTTP /
    LLM), else None. One small pool per arena: httpcore scans its whole pool for every request,
    so one client shared by hundreds of players costs O(players^2) per turn."""
    if not any(s.player_kind.remote for s in specs):
        return None
    return make_client(max(8, 2 * n_players))


async def ask_agent(
    agent, env: dict[str, Any], wealth: float, kind: PlayerKind, pool: float | None = None
) -> AgentResult:
    """One external decision, asked as its ``kind`` asks; an agent that raises still yields the
    fallback harvest. ``pool``: the stock before the harvest, when the model's requests are whole units."""
    try:
        return await kind.ask(agent, env, wealth, pool)
    except Exception as exc:  # noqa: BLE001 - a broken agent must never stall the turn
        return AgentResult(fallback_harvest(wealth), f"agent: {type(exc).__name__}: {exc}", [], 0.0, True)


async def each(jobs: list[Coroutine[Any, Any, T]], at_once: bool) -> list[T]:
    """The results of ``jobs``, in order: run at once (``asyncio.gather``) when ``at_once`` (some
    may wait), else one after the other (none suspends, so none needs an event loop:
    ``sync_loop.drive``)."""
    if at_once and jobs:
        return list(await asyncio.gather(*jobs))
    return [await job for job in jobs]


__all__: list[str] = []
