"""Request and response models of the HTTP API (004_* A.2), with the seed's field names.

Every body is a pydantic model, so ``/openapi.json`` documents it and a bad field is refused
before the route runs (a failed request changes nothing). The arena configuration itself is
validated by :class:`bdpd_jax.config.game.ArenaConfig` (its models are reused here); the players
of ``join`` by :class:`bdpd_jax.host.live.players.LivePlayerConfig`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, cast

from pydantic import ConfigDict, Field, StrictBool, model_validator

from bdpd_jax.config.base import ConfigModel
from bdpd_jax.config.discussion import DiscussionConfig
from bdpd_jax.config.game import ModelConfig, ObsVar

# the longest pause between auto ticks: Infinity or 1e308 would sleep forever
from bdpd_jax.config.limits import MAX_TICK_INTERVAL_MS, Id, Label, Name
from bdpd_jax.host.live.arena import DEFAULT_PACT_SLOTS
from bdpd_jax.host.live.governance_agent import GovernorSpec

_BODY = ConfigDict(extra="forbid", allow_inf_nan=False)
_OPEN = ConfigDict(extra="allow", allow_inf_nan=False)


class BuiltinPlayer(ConfigModel):
    """A built-in player of the creation payload (``players``), joined at once."""

    model_config = _BODY
    strategy: Label = "conservative"
    name: Name | None = Field(None, min_length=1)
    intensity: float = Field(0.5, gt=0, le=1)
    reduction_factor: float = Field(1.0, ge=0)
    private_resource: float = Field(30.0, ge=0)
    active_from: int = Field(1, ge=1)  # the first turn it acts (bounded by the arena's maxTurns check)
    talk: dict[Id, Any] | None = None


class CreateArena(ConfigModel):
    """``POST /api/arenas``: the A.2.1 payload plus the server's options."""

    model_config = _BODY
    model: ModelConfig = Field(default_factory=ModelConfig)
    observability: dict[Label, ObsVar] = Field(default_factory=dict)
    agent_timeout: int = Field(30000, ge=1)
    players: list[BuiltinPlayer] | None = None
    pacts: list[dict[Id, Any]] = Field(default_factory=list)
    perturbations: list[dict[Id, Any]] = Field(default_factory=list)
    plugins: list[dict[Id, Any]] = Field(default_factory=list, description="governance plugins (issue 17)")
    discussion: DiscussionConfig | None = Field(
        None,
        description="talk between harvests: a report of every catch, then up to `rounds` utterances "
        "(docs/semantics/live/agents.md §14)",
    )
    seed: int | None = Field(None, ge=0, lt=2**32, description="random in [0, 2**32) when absent")
    no_talk: StrictBool | None = Field(None, description="default: the server's --no-talk")
    pact_slots: int = Field(DEFAULT_PACT_SLOTS, ge=1, description="bounded by bdpd_jax/config/limits.py MAX_PACT_SLOTS")
    turns: int | None = Field(None, ge=1, description="turns to play (default model.maxTurns)")
    perturbable: StrictBool = True
    llm_cache: StrictBool | None = Field(
        None, description="LLM response cache: null (default) at temperature 0, true at any, false off (issue 38)"
    )
    token_budget: int | None = Field(
        None, ge=1, le=10**15, description="tokens the arena's LLM players may use; the arena stops once spent"
    )
    spectator_private_text: StrictBool = Field(
        False,
        description="spectators read private messages' text too (default: they see sender, recipient and turn only)",
    )
    governance_agent: GovernorSpec | None = Field(
        None,
        description="the owner's HTTP / LLM governance agent, driving an external governance_agent plugin "
        "(docs/semantics.md, Governance plugins)",
    )

    #: the server's options that are the Arena's own arguments (``arena_options``), not config
    ARENA_OPTIONS: ClassVar[tuple[str, ...]] = (
        "pact_slots",
        "turns",
        "perturbable",
        "llm_cache",
        "token_budget",
        "governance_agent",
    )

    def config(self) -> dict[str, Any]:
        """The arena configuration (what ``Arena`` validates), as given."""
        server = {"seed", "no_talk", "spectator_private_text", *self.ARENA_OPTIONS}
        out = self.model_dump(mode="json", exclude_unset=True, exclude=server)
        if self.players is not None:
            out["players"] = [p.model_dump(mode="json", exclude_unset=True) for p in self.players]
        return out

    def arena_options(self) -> dict[str, Any]:
        """The ``Arena(...)`` keyword arguments this payload gives (``ARENA_OPTIONS``)."""
        return {k: getattr(self, k) for k in self.ARENA_OPTIONS}


class Created(ConfigModel):
    arena_id: str
    owner_key: str
    arena_key: str
    spectator_token: str
    seed: int
    status: str
    spectator_private_text: bool = False


class StartArena(ConfigModel):
    """``POST /start``: manual ticks (``POST /tick``) or automatic ones every ``tickIntervalMs``."""

    model_config = _BODY
    tick_mode: Literal["manual", "auto"] = "manual"
    tick_interval_ms: float = Field(0.0, ge=0, le=MAX_TICK_INTERVAL_MS)


class PerturbSpec(ConfigModel):
    """An ad-hoc Table A.1 spec (checked in full by ``bdpd_jax.config.perturbations`` when fired)."""

    model_config = _OPEN
    id: Id | None = None
    type: Id
    trigger: dict[Id, Any] | None = None
    payload: dict[Id, Any] = Field(default_factory=dict)


class Perturb(ConfigModel):
    """``POST /perturb``: a bare spec, ``{"spec": {...}}`` or ``{"specId": "..."}``."""

    model_config = _OPEN
    spec_id: Id | None = None
    spec: PerturbSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_spec(cls, data: Any) -> Any:
        if isinstance(data, dict) and "type" in data and "spec" not in data and "specId" not in data:
            return {"spec": data}
        return data

    @model_validator(mode="after")
    def _one_form(self) -> Perturb:
        if (self.spec_id is None) == (self.spec is None):
            raise ValueError("body: give exactly one of a spec, {'spec': {...}} or {'specId': '...'}")
        if self.model_extra:
            raise ValueError(f"body: unknown fields {sorted(self.model_extra)}")
        return self

    def target(self) -> str | dict[str, Any]:
        if self.spec_id is not None:
            return self.spec_id
        spec = cast(PerturbSpec, self.spec).model_dump(mode="json", exclude_none=True)  # _one_form: one is set
        spec.setdefault("trigger", {"kind": "manual"})
        spec.setdefault("id", f"owner-{spec['type']}")
        return spec


class Fired(ConfigModel):
    """A perturbation the owner fired: applied before turn ``turn``, logged in its record."""

    turn: int
    spec: dict[str, Any]
    type: str
    target: str | None = None
    value: float | None = None


class PlayerRow(ConfigModel):
    player_id: str
    agent_type: str
    kind_label: str = ""  # what the dashboard shows for its kind (PlayerKind.label)


class PublicView(ConfigModel):
    """What everyone may know (no key): no value of the game state that an observation hides."""

    arena_id: str
    name: str
    engine_mode: str
    stock_label: str = "stock"  # the engine's name for its stock (Engine.stock_label)
    no_share_note: str | None = None  # why its share may be null (Engine.no_share_note)
    status: Literal["waiting", "running", "closed", "interrupted"]
    turn: int
    max_turns: int
    players: list[PlayerRow]


class OwnerView(PublicView):
    """Everything: the true state of the last tick, pacts and every message."""

    stock: float | None = None
    collapsed: bool = False
    meta: dict[str, Any]
    last_tick: dict[str, Any] | None = None
    pacts: list[dict[str, Any]] | None = None
    messages: list[dict[str, Any]] | None = None


class ArenaList(ConfigModel):
    arenas: list[PublicView]


class Joined(ConfigModel):
    player_id: str
    players: list[str]


class Started(PublicView):
    tick_mode: Literal["manual", "auto"]


class Ticked(PublicView):
    tick: dict[str, Any] | None


class HistoryRow(ConfigModel):
    arena_id: str
    status: Literal["closed", "interrupted"]
    created_at: str | None = None
    closed_at: str | None = None
    turns_played: int | None = None
    seed: int | None = None
    name: str | None = None
    engine_mode: str | None = None


class HistoryList(ConfigModel):
    arenas: list[HistoryRow]


class PerturbationLog(ConfigModel):
    specs: list[dict[str, Any]]
    log: list[dict[str, Any]]


class Health(ConfigModel):
    ok: bool
    ts: str


class Deleted(ConfigModel):
    deleted: str


class Resume(ConfigModel):
    """``POST /resume`` of an interrupted arena: a join spec for every external player
    (``{playerId: spec}``); builtins resume by themselves."""

    model_config = _BODY
    players: dict[Name, dict[Id, Any]] = Field(default_factory=dict)
    governance_agent: GovernorSpec | None = Field(None, description="required when the arena had one")
    tick_mode: Literal["manual", "auto"] = "manual"
    tick_interval_ms: float = Field(0.0, ge=0, le=MAX_TICK_INTERVAL_MS)


class Summary(ConfigModel):
    """The post-game report (summary.json): outcome, victory evaluation, player rankings."""

    model_config = ConfigDict(extra="allow")
    arena_id: str
    status: str
    turns_played: int
    survived: bool
    collapse_turn: int | None = None
    final_stock: float | None = None
    victory: dict[str, Any] | None = None
    players: list[dict[str, Any]]


class ErrorBody(ConfigModel):
    detail: str


#: the error responses every route may give, for /openapi.json
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "a value refused (the message names the field)"},
    403: {"model": ErrorBody, "description": "missing or wrong key"},
    404: {"model": ErrorBody, "description": "no such arena"},
    409: {"model": ErrorBody, "description": "the arena's status does not allow it"},
    413: {"model": ErrorBody, "description": "request body over the limit"},
    422: {"model": ErrorBody, "description": "the body does not fit its model (field and value named)"},
}


class SetTickMode(ConfigModel):
    """``POST /mode`` of a running arena: switch between manual and auto ticks, or change the
    auto interval (the dashboard's mode and interval controls)."""

    model_config = _BODY
    tick_mode: Literal["manual", "auto"]
    tick_interval_ms: float = Field(0.0, ge=0, le=MAX_TICK_INTERVAL_MS)


class TickModeView(ConfigModel):
    tick_mode: Literal["manual", "auto"]
    tick_interval_ms: float | None = None


class PerturbationType(ConfigModel):
    """One registered Table A.1 type as the dashboard's perturbation form builds it."""

    type: str
    description: str
    example: dict[str, Any]
    payload_schema: dict[str, Any]
    supported: bool | None = None


class PerturbationTypes(ConfigModel):
    types: list[PerturbationType]


class DashboardPlayer(ConfigModel):
    player_id: str
    agent_type: str
    kind_label: str = ""  # what the dashboard shows for its kind (PlayerKind.label)
    strategy: str | None = None  # a kernel-decided player's built-in


class DashboardTables(ConfigModel):
    """What the dashboard's tables show, the same for the owner and the spectator (but private
    message text, which a spectator sees only where the owner chose so): no key, no meta
    (player URLs, the config, the governance agent's endpoint stay the owner's)."""

    players: list[DashboardPlayer]
    messages: list[dict[str, Any]]
    pacts: list[dict[str, Any]]
    perturbations: list[dict[str, Any]]
    sanctions: list[dict[str, Any]]
    tick_mode: Literal["manual", "auto"] = "manual"
    tick_interval_ms: float | None = None
    spectator_private_text: bool = False  # the owner's choice at create: spectators read private text
