"""``ArenaCallers``: what a live arena reaches its players through -- its HTTP client and the
agents made for its players -- from the arena's start to its close.

The client is lent (``lend``: a server's or a :class:`~bdpd_jax.host.live.live_batch.LiveBatch`'s
pooled client, closed by its owner) or the arena's own, made when some player calls out (HTTP /
LLM) and closed with the arena. Each agent is told the arena's rules: its timeout, whether it
talks, the sanction tool when the arena offers it, the speak tool when it talks between
harvests, whole-unit answers. Closing closes every agent, then the governance agent, then the
arena's own client.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.host.agents.transport import make_client
from bdpd_jax.host.live.arena_llm import ArenaLLM
from bdpd_jax.host.live.dispatch import sanction_offered
from bdpd_jax.host.live.governance_agent import Governor
from bdpd_jax.host.live.operator import Operator
from bdpd_jax.host.live.players import LivePlayerConfig, make_agent
from bdpd_jax.host.player_kinds import AgentContext


def own_client(specs: list[LivePlayerConfig], n_players: int):
    """A new HTTP client for an arena of ``n_players`` when some of ``specs`` calls out (HTTP /
    LLM), else None. One small pool per arena: httpcore scans its whole pool for every request,
    so one client shared by hundreds of players costs O(players^2) per turn."""
    if not any(s.player_kind.remote for s in specs):
        return None
    return make_client(max(8, 2 * n_players))


@dataclasses.dataclass(eq=False)
class ArenaCallers:
    """The client and the agent factory of the arena ``owner`` (its id) under ``config``."""

    config: ArenaConfig
    _: dataclasses.KW_ONLY
    no_talk: bool
    operator: Operator
    owner: str
    client: Any = None  # lent (closed by its owner) or the arena's own
    executor: Any = None  # the JS workers of code players
    llm: ArenaLLM | None = None  # the arena's LLM calls: limits, cache, tokens (host/live/arena_llm.py)
    owns_client: bool = dataclasses.field(default=False, init=False)  # made here (closed by aclose), not lent

    def lend(self, client) -> None:
        """Use ``client`` (closed by its owner) unless a client is held already."""
        if self.client is None:
            self.client = client

    def ensure_client(self, specs: list[LivePlayerConfig], n_players: int) -> None:
        """Without a client: the arena's own (:func:`own_client`) when one of ``specs`` calls out."""
        if self.client is None and (client := own_client(specs, n_players)) is not None:
            self.client, self.owns_client = client, True

    def agent(self, spec: LivePlayerConfig) -> Any:
        """A player's agent (None for a builtin), on this client."""
        talk = self.config.discussion
        ctx = AgentContext(
            timeout_ms=float(self.config.agent_timeout),
            no_talk=self.no_talk,
            client=self.client,
            executor=self.executor,
            operator=self.operator,
            sanction=sanction_offered(self.config),
            discussion=talk is not None and talk.on,
            whole_units=bool(getattr(self.config.model, "whole_units", False)),
            owner=self.owner,
            llm=self.llm,
        )
        return make_agent(spec, ctx)

    async def aclose(self, agents: list[Any], governor: Governor | None) -> None:
        """Close ``agents`` (those that hold a client), the ``governor`` (None: none), then the
        arena's own client."""
        for ag in agents:
            if ag is not None and hasattr(ag, "aclose"):
                await ag.aclose()
        if governor is not None:
            await governor.aclose()
        if self.owns_client and self.client is not None:
            await self.client.aclose()
            self.client = None


__all__ = ["ArenaCallers"]
