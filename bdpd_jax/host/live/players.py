"""Player specs of a live arena (004_* A.2 ``join`` payload) and the agents they make.

``agentType`` names a registered player kind (bdpd_jax/host/player_kinds.py): ``builtin`` (a
kernel heuristic, decided inside the jitted kernel ``decide``), ``code`` (``strategyCode``:
sandboxed JS), ``http`` (``url``), ``llm`` (``model`` + an operator's ``credential`` name or a
``baseUrl`` the operator allows, :mod:`~bdpd_jax.host.live.operator`) or ``scripted`` (``script``: a
list of recorded turns; what replay and tests use). Each kind checks its own fields and builds
its agent. Everything is validated at join: a JS syntax error is rejected with the parser's
message, a bad URL by name, a field over its size limit (``MAX_*_CHARS``) by name.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, Protocol

from pydantic import ConfigDict, Field, field_validator, model_validator

from bdpd_jax.config.base import ConfigModel, wire_name
from bdpd_jax.config.limits import (
    MAX_CODE_CHARS,
    MAX_LABEL_CHARS,
    MAX_NAME_CHARS,
    MAX_PROMPT_CHARS,
    MAX_TURNS,
    MAX_URL_CHARS,
    Key,
    Label,
)
from bdpd_jax.host.agents.govsim_prompts import scenario_of
from bdpd_jax.host.live.operator import redact_url
from bdpd_jax.host.player_kinds import AgentContext, PlayerKind, player_kind

# Size limits of a join body's free-text fields (checked at join): bdpd_jax/config/limits.py
MAX_MODEL_CHARS: int = MAX_LABEL_CHARS
MAX_RULES_CHARS: int = 8192  # an LLM player's ``rulesText`` (a scenario's whole rules)
MAX_TEMPERATURE: float = 2.0  # the OpenAI-compatible range of ``temperature``


class LivePlayerConfig(ConfigModel):
    """One player joining a live arena. ``displayName`` is accepted for ``name``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_by_name=True)  # name or displayName
    agent_type: str = Field("builtin", max_length=MAX_NAME_CHARS)  # a registered kind (host/player_kinds.py)
    name: str | None = Field(
        None, alias="displayName", serialization_alias="name", min_length=1, max_length=MAX_NAME_CHARS
    )
    private_resource: float = Field(30.0, ge=0)
    active_from: int = Field(1, ge=1, le=MAX_TURNS)  # the first turn it acts (PlayerConfig.active_from)
    # builtin
    strategy: Label = "conservative"
    intensity: float = Field(0.5, gt=0, le=1)
    reduction_factor: float = Field(1.0, ge=0)
    talk: dict | None = None  # scripted talk of a builtin (bdpd_jax/config/governance.py)
    # code
    strategy_code: str | None = Field(None, max_length=MAX_CODE_CHARS)
    rng_seed: int | None = None
    # http / llm
    url: str | None = Field(None, max_length=MAX_URL_CHARS)
    base_url: str | None = Field(None, max_length=MAX_URL_CHARS)
    model: str | None = Field(None, max_length=MAX_MODEL_CHARS)
    credential: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)  # a name from the operator's list
    api_key_env: Key | None = None  # refused: credentials are the operator's (kept to say so by name)
    system_prompt: str | None = Field(None, max_length=MAX_PROMPT_CHARS)
    temperature: float | None = Field(None, ge=0, le=MAX_TEMPERATURE)
    rules_text: str | None = Field(None, min_length=1, max_length=MAX_RULES_CHARS)  # replaces the BDPD rules
    fallback_harvest: float | None = Field(None, ge=0)  # stock units on a missing/invalid answer (None: 0.2 x capacity)
    timeout_ms: float | None = Field(None, gt=0)  # only shorter than the arena's (checked at join)
    # llm: GovSim's protocol (issue 37; docs/semantics/live/agents.md §15)
    architecture: Literal["minimal", "govsim"] | None = None  # None: minimal
    answer_format: Literal["tool", "text", "auto"] | None = None  # None: tool (minimal), text (govsim)
    scenario: Label | None = None  # a GovSim scenario's wording for the govsim architecture
    persona: str | None = Field(None, min_length=1, max_length=MAX_PROMPT_CHARS)  # the player's goals
    embeddings: Literal["auto", "endpoint", "lexical"] | None = None  # None: auto
    # scripted: [{"harvest": h, "actions": [...]}, ...] by turn (turn 1 first); past the end
    # the last entry repeats
    script: list[dict] | None = None

    @field_validator("agent_type")
    @classmethod
    def _registered(cls, v: str) -> str:
        player_kind(v)  # ValueError naming agentType and the registered kinds
        return v

    @model_validator(mode="after")
    def _fields_of_type(self) -> LivePlayerConfig:
        kind = self.player_kind
        if self.api_key_env is not None:
            raise ValueError(
                "apiKeyEnv: a player cannot choose a credential; pick `credential`, a name from the operator's list"
            )
        kind.check(self)  # the fields its kind needs (ValueError naming the field)
        if self.scenario is not None:
            scenario_of(self.scenario)  # ValueError naming an unknown scenario
        for k in ("persona", "embeddings"):
            if getattr(self, k) is not None and self.architecture != "govsim":
                raise ValueError(f"{wire_name(LivePlayerConfig, k)}: an option of architecture 'govsim'")
        llm_only = ("architecture", "answer_format", "scenario", "persona", "embeddings")
        for k in ("rules_text", "fallback_harvest", *llm_only):  # (temperature stays ignored elsewhere)
            if not kind.uses_llm and getattr(self, k) is not None:
                raise ValueError(
                    f"{wire_name(LivePlayerConfig, k)}: an option of LLM players, got agentType {kind.name!r}"
                )
        if kind.external and self.talk is not None:
            raise ValueError("talk: scripted talk is for builtin players; external players use the tools")
        return self

    @property
    def player_kind(self) -> PlayerKind:
        """This player's registered kind (bdpd_jax/host/player_kinds.py): what the host reads."""
        return player_kind(self.agent_type)

    @property
    def external(self) -> bool:
        """Whether an agent outside the kernel decides for this player (its kind's property)."""
        return self.player_kind.external

    @property
    def waits(self) -> bool:
        """Whether asking this player can wait (a tick then needs an event loop): its kind's."""
        return self.player_kind.waits

    @property
    def player_id(self) -> str:
        """The name in play (``playerId``): a joining player without one is named then
        (``arena_args.joining_player``), so every player of a run has one."""
        if self.name is None:
            raise ValueError("name: a player in play has a name (it is given one when it joins)")
        return self.name

    def public(self) -> dict[str, Any]:
        """What meta.json stores: the spec without the strategy code (private to its owner)."""
        d = self.model_dump(mode="json", exclude_none=True)
        if "strategyCode" in d:
            d["strategyCode"] = f"<{len(self.strategy_code or '')} chars>"
        for k in ("url", "baseUrl"):  # tokens in URLs stay out of meta.json
            if k in d:
                d[k] = redact_url(d[k])
        return d


class TimedSpec(Protocol):
    """What :func:`player_timeout_ms` reads: a player's or a governance agent's spec."""

    @property
    def player_kind(self) -> PlayerKind: ...

    @property
    def timeout_ms(self) -> float | None: ...


def player_timeout_ms(spec: TimedSpec, timeout_ms: float) -> float:
    """The deadline of one call: the arena's ``agentTimeout`` (``timeout_ms``) unless the player
    asked for less; never past its kind's cap (code: the seed's 50 ms). A longer ``timeoutMs``
    is refused."""
    kind = spec.player_kind
    cap = float(timeout_ms) if kind.timeout_cap_ms is None else min(float(timeout_ms), kind.timeout_cap_ms)
    if spec.timeout_ms is not None and spec.timeout_ms > cap:
        raise ValueError(
            f"timeoutMs: at most the arena's limit for {kind.name} players ({cap:g} ms), got {spec.timeout_ms:g}"
        )
    return cap if spec.timeout_ms is None else float(spec.timeout_ms)


def make_agent(spec: LivePlayerConfig, ctx: AgentContext):
    """The agent of a player (None where the kernel decides), built by its kind under the
    player's deadline (:func:`player_timeout_ms` of the arena's ``ctx.timeout_ms``)."""
    kind = spec.player_kind
    if not kind.external:
        return None
    return kind.make_agent(spec, dataclasses.replace(ctx, timeout_ms=player_timeout_ms(spec, ctx.timeout_ms)))


__all__ = [
    "MAX_CODE_CHARS",
    "MAX_NAME_CHARS",
    "MAX_PROMPT_CHARS",
    "MAX_RULES_CHARS",
    "MAX_TEMPERATURE",
    "MAX_URL_CHARS",
    "LivePlayerConfig",
    "make_agent",
    "player_timeout_ms",
]
