"""``ArenaLLM``: one live arena's side of its LLM players' calls (issue 38).

It makes each LLM player's :class:`~bdpd_jax.host.agents.llm_client.LLMCalls` (the operator's
limits and retries for the player's endpoint, the arena's response cache, the arena's token
account) and, at the end of every turn (``ArenaRun.end_turn``), writes the tokens into the
record and the totals:

* each decision of a player whose answers of this turn reported tokens gets ``usage: {promptTokens,
  completionTokens}`` (its decision and its utterances of the turn together);
* the owner's LLM governance agent (host/live/governance_agent.py) calls through the same layer
  (:meth:`ArenaLLM.calls_for`): its tokens are on the record's ``governance`` entry
  (``usage``), in the arena's usage of the turn and total (so in the ``tokenBudget``) and in
  the report's ``governanceAgent: {usage}``;
* the record gets the arena's ``usage`` of the turn when any player (or the agent) used the model;
* the totals per player and per arena feed the report (:meth:`ArenaLLM.report`): ``usage``
  at the top and on each LLM player, ``tokenBudget`` and ``stopped``; the closing meta.json
  gets ``llmCalls: {sent, cached, retried}`` (:meth:`ArenaLLM.calls_report`).

``tokenBudget``: once the tokens recorded reach it, the turn that spent it is the last (the
record says why in ``stopped``; the game is over, as at its last turn, and closing writes the
report); a call that would start after the budget is spent is refused at once (``budget: ...``).
A replayed arena reads the tokens back from its log (its scripted players' ``take_usage``), so
its records, its totals and its stop are the run's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from bdpd_jax.host.agents.llm_cache import ResponseCache
from bdpd_jax.host.agents.llm_client import LLMCalls, TokenAccount, Usage
from bdpd_jax.host.agents.llm_limits import limiter_for
from bdpd_jax.host.live.operator import Operator
from bdpd_jax.host.player_kinds import player_kind


class ArenaRun(Protocol):
    """What this module reads of an arena's run (``host.live.arena_run.ArenaRun``, which holds an
    ``ArenaLLM``: named here, not imported, so the two modules do not import each other)."""

    @property
    def agents(self) -> list[Any]: ...

    @property
    def specs(self) -> list[Any]: ...

    def agent_kind(self, i: int) -> str: ...


#: the folder of an arena's response cache inside its own folder (no operator ``llmCacheDir``)
CACHE_FOLDER = "llm-cache"
#: the largest ``tokenBudget`` (beyond it a budget is no bound: say None)
MAX_TOKEN_BUDGET: int = 10**15


def check_llm_options(llm_cache: Any, token_budget: Any) -> tuple[bool | None, int | None]:
    """The arena options ``llmCache`` (None: on at temperature 0; True: at any temperature;
    False: off) and ``tokenBudget`` (an integer >= 1, or None); ValueError naming the field."""
    if llm_cache is not None and not isinstance(llm_cache, bool):
        raise ValueError(f"llmCache: must be true, false or null, got {llm_cache!r}")
    if token_budget is not None and (
        isinstance(token_budget, bool) or not isinstance(token_budget, int) or not 1 <= token_budget <= MAX_TOKEN_BUDGET
    ):
        raise ValueError(f"tokenBudget: must be an integer in [1, {MAX_TOKEN_BUDGET}] or null, got {token_budget!r}")
    return llm_cache, token_budget


class ArenaLLM:
    """The LLM calls of one arena: ``account`` (its tokens, calls and budget) and the cache in
    the operator's ``llmCacheDir``, else the arena folder's ``llm-cache`` (no folder at all:
    no cache), its entries scoped by ``scope`` (the arena's id)."""

    def __init__(
        self,
        operator: Operator,
        *,
        llm_cache: bool | None = None,
        token_budget: int | None = None,
        out_dir: str | Path | None = None,
        scope: str = "",
    ) -> None:
        self.llm_cache, budget = check_llm_options(llm_cache, token_budget)
        self.operator = operator
        self.account = TokenAccount(budget=budget)
        folder = operator.llm_cache_dir or (None if out_dir is None else Path(out_dir) / CACHE_FOLDER)
        self.scope = scope  # the arena's id: its cache entries are its own (llm_cache.py)
        self.cache = None if folder is None or self.llm_cache is False else ResponseCache(folder, scope)
        self.recorded = Usage()  # tokens written into the records (the budget's count)
        self.players: dict[str, Usage] = {}  # per player, the same
        self.governor: Usage | None = None  # the owner's LLM governance agent's, once it reported any
        self.stopped: str | None = None  # why the arena stopped before its game ended

    def use_folder(self, out_dir: str | Path) -> None:
        """The arena writes to ``out_dir`` from now on (a resumed replay): its cache lives
        there when it had none and the operator names no ``llmCacheDir``."""
        if self.cache is None and self.llm_cache is not False:
            self.cache = ResponseCache(Path(out_dir) / CACHE_FOLDER, self.scope)

    @property
    def token_budget(self) -> int | None:
        return self.account.budget

    def calls_for(self, base_url: str) -> LLMCalls:
        """An LLM player's calls to ``base_url``: the operator's limits for that endpoint (the
        process's limiter), the arena's cache and account."""
        ep = self.operator.endpoint_limits(base_url)
        limiter = None
        if ep is not None and (ep.max_in_flight is not None or ep.requests_per_minute is not None):
            limiter = limiter_for(ep.base_url, ep.max_in_flight, ep.requests_per_minute)
        return LLMCalls(
            base_url,
            limiter=limiter,
            max_retries=0 if ep is None else ep.max_retries,
            cache=self.cache,
            cache_any_temperature=self.llm_cache is True,
            account=self.account,
        )

    def end_turn(self, run: ArenaRun, line: dict[str, Any]) -> bool:
        """Write this turn's tokens into ``line`` (its decisions and the arena's ``usage``) and
        the totals; True when the budget is now spent (``line["stopped"]`` says so)."""
        turn = Usage()
        decisions = line.get("decisions", ())
        for i, (d, agent) in enumerate(zip(decisions, run.agents, strict=False)):
            take = getattr(agent, "take_usage", None)
            got = take() if callable(take) else None
            if got is None:
                continue
            u = Usage.from_wire(got, MAX_TOKEN_BUDGET)
            d["usage"] = u.wire()
            turn.add(u)
            self.players.setdefault(run.specs[i].player_id, Usage()).add(u)
        gov = line.get("governance")
        spent = gov.get("usage") if isinstance(gov, dict) else None
        if isinstance(spent, dict):  # the owner's LLM governance agent (its entry has the tokens)
            u = Usage.from_wire(spent, MAX_TOKEN_BUDGET)
            turn.add(u)
            self.governor = self.governor or Usage()
            self.governor.add(u)
        elif not any("usage" in d for d in decisions):
            return False
        line["usage"] = turn.wire()
        self.recorded.add(turn)
        budget = self.account.budget
        if budget is not None and self.recorded.total >= budget and self.stopped is None:
            self.stopped = line["stopped"] = (
                f"tokenBudget: {self.recorded.total} tokens used of a budget of {budget} (turn {line['turn']})"
            )
            return True
        return False

    def report(self, run: ArenaRun) -> dict[str, Any]:
        """What summary.json says of the LLM calls (nothing for an arena without LLM players
        whose governance agent never reported tokens)."""
        if self.governor is None and not any(player_kind(run.agent_kind(i)).uses_llm for i in range(len(run.specs))):
            return {}
        out: dict[str, Any] = {"usage": self.recorded.wire()}
        if self.governor is not None:
            out["governanceAgent"] = {"usage": self.governor.wire()}
        if self.account.budget is not None:
            out["tokenBudget"] = self.account.budget
        if self.stopped is not None:
            out["stopped"] = self.stopped
        return out

    def calls_report(self, run: ArenaRun) -> dict[str, Any]:
        """What the closing meta.json says of the calls: ``llmCalls: {sent, cached, retried}``
        (nothing without LLM players). *Choice:* in meta.json, not the report: a replay makes
        no call, and its report is the folder's summary.json exactly."""
        acct = self.account
        if not (acct.sent or acct.cached) and not any(
            player_kind(run.agent_kind(i)).uses_llm for i in range(len(run.specs))
        ):
            return {}  # (an LLM governance agent's calls count: they went through this account)
        return {"llmCalls": acct.calls()}

    def player_usage(self, player: str) -> dict[str, int] | None:
        u = self.players.get(player)
        return None if u is None else u.wire()


__all__ = ["ArenaLLM", "CACHE_FOLDER", "MAX_TOKEN_BUDGET", "check_llm_options"]
