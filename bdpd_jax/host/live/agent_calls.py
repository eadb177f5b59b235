"""How a live arena asks its players: config players as specs, one external decision, many at once
(its client and agents: :mod:`~bdpd_jax.host.live.arena_callers`)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from bdpd_jax.config.game import PlayerConfig
from bdpd_jax.host.agents.base import AgentResult, fallback_harvest
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
