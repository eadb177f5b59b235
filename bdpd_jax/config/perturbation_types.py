"""The Table A.1 perturbation specs (004_* A.1.1): triggers, payloads and one pydantic model
per type, each turning its JSON into the numbers of one kernel slot (``payload_numbers``).

Fired at a turn, on a threshold condition or by the owner, at most once each
(kernels/perturb.py; docs/semantics.md §10). bdpd_jax/config/perturbations.py registers :data:`ARENA_SPECS`
with the config's spec registry and compiles specs into slots; a type added later is one
:class:`ArenaSpec` subclass plus one ``specs.register_perturbation`` call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, get_args

from pydantic import ConfigDict, Field, field_validator, model_validator

from ..kernels import perturb as _pk
from ..kernels.engines import ENGINES
from ..kernels.params import OBS_VARS as _OBS_VARS
from ..kernels.params import OWN_VARS, PEER_VARS
from ..kernels.policies import BUILTINS, Policy
from ..kernels.registry import Registry
from .base import ConfigModel
from .limits import MAX_TURNS, Id
from .policy_check import check_policy_fields

STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)  # every spec model: unknown keys and NaN/inf refused


class TurnTrigger(ConfigModel):
    """Fire at the start of turn ``turn`` (1-based), before players observe."""

    model_config = STRICT
    kind: Literal["turn"]
    turn: int = Field(ge=1, le=MAX_TURNS)


class ThresholdTrigger(ConfigModel):
    """Fire at the start of the first turn where ``variable op value`` holds (state as it
    stands then). Variables: kernels.perturb.TRIGGER_VARS; ops: <, <=, >, >=."""

    model_config = STRICT
    kind: Literal["threshold"]
    variable: Literal[_pk.TRIGGER_VARS]  # type: ignore[valid-type]
    op: Literal["<", "<=", ">", ">="]
    value: float


class ManualTrigger(ConfigModel):
    """Never fires by itself: the owner fires it by id (``POST /api/arenas/:id/perturb``)."""

    model_config = STRICT
    kind: Literal["manual"]


StandardTrigger = Annotated[TurnTrigger | ThresholdTrigger | ManualTrigger, Field(discriminator="kind")]


class FactorPayload(ConfigModel):
    model_config = STRICT
    factor: float = Field(ge=0)


class RegenSetPayload(ConfigModel):
    model_config = STRICT
    value: float = Field(ge=0)


class CommonsPayload(ConfigModel):
    model_config = STRICT
    amount: float  # signed: + adds stock, - removes it (clamped at 0)


class WealthPayload(ConfigModel):
    """Exactly one of ``factor`` (w <- w x factor) or ``amount`` (w <- max(w + amount, 0));
    ``player`` (index or name) or None for every player."""

    model_config = STRICT
    factor: float | None = Field(None, ge=0)
    amount: float | None = None
    player: int | Id | None = None

    @model_validator(mode="after")
    def _one_of(self) -> WealthPayload:
        if (self.factor is None) == (self.amount is None):
            raise ValueError("payload: give exactly one of factor (multiplicative) or amount (additive)")
        return self


class OverridePayload(ConfigModel):
    """From the firing turn on, ``player`` (index or name; None = all) plays ``strategy``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, arbitrary_types_allowed=True)
    player: int | Id | None
    strategy: Any  # a built-in name or a bdpd_jax.Policy

    @field_validator("strategy")
    @classmethod
    def _known(cls, v: Any) -> Any:
        if not (isinstance(v, Policy) or (isinstance(v, str) and v in BUILTINS)):
            raise ValueError(f"payload.strategy: unknown strategy {v!r}; known: {sorted(BUILTINS)}")
        if isinstance(v, Policy):
            check_policy_fields(v, "payload.strategy")
        return v


class FlipPayload(ConfigModel):
    """Set ``variable``'s visibility (``visible`` true/false) or toggle it (omitted)."""

    model_config = STRICT
    variable: Literal[_OBS_VARS]  # type: ignore[valid-type]
    visible: bool | None = None


class ThresholdPayload(ConfigModel):
    """Exactly one of ``delta`` (T <- max(T + delta, 0)) or ``value`` (T <- value)."""

    model_config = STRICT
    delta: float | None = None
    value: float | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _one_of(self) -> ThresholdPayload:
        if (self.delta is None) == (self.value is None):
            raise ValueError("payload: give exactly one of delta (shift) or value (set)")
        return self


def _player_index(ref: int | str | None, config, where: str) -> int:
    if ref is None:
        return _pk.ALL
    players = config.players or []
    if isinstance(ref, int):
        if not 0 <= ref < len(players):
            raise ValueError(f"{where}.payload.player: {ref} is not a player index (0..{len(players) - 1})")
        return ref
    names = [p.name for p in players]
    if ref not in names:
        raise ValueError(f"{where}.payload.player: no player named {ref!r}")
    return names.index(ref)


class ArenaSpec(ConfigModel):
    """Common part of the Table A.1 specs: ``check`` runs at config time, ``numbers`` gives the
    kernel slot."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, arbitrary_types_allowed=True)
    example: ClassVar[dict[str, Any]]  # a valid payload (docs; the registry contract test fires it)
    id: Id
    trigger: StandardTrigger
    if TYPE_CHECKING:  # every registered spec declares ``type: Literal[name]`` and its payload (fields of its own)
        type: str
        payload: Any

    def check(self, config, where: str) -> None:
        engine_name = config.model.engine_mode
        eng = ENGINES[engine_name]
        if not _pk.supported(eng, self.type):
            raise ValueError(
                f"{where}.type: {self.type!r} acts on the engine's "
                f"{_pk.perturbation_type(self.type).requires!r}, which "
                f"engineMode={engine_name!r} does not have (docs/semantics.md §10 lists what each "
                f"type acts on per engine)"
            )
        t = self.trigger
        if (
            isinstance(t, ThresholdTrigger)
            and t.variable in _pk.ENGINE_TRIGGER_VARS
            and t.variable not in eng.variables
        ):
            raise ValueError(
                f"{where}.trigger.variable: {t.variable!r} is not produced by engineMode={engine_name!r} "
                f"(it produces {list(eng.variables)})"
            )
        if config.players is not None:
            self.numbers(config, where)

    def numbers(self, config, where: str, policies: tuple = ()) -> dict:
        """This spec's slot as plain numbers (kernels.perturb.PerturbParams fields)."""
        t = self.trigger
        out = dict(
            code=_pk.type_code(self.type),
            trigger=_pk.TRIGGER_KINDS.index(t.kind),
            turn=0,
            variable=0,
            op=0,
            level=0.0,
            value=0.0,
            mode=0,
            player=_pk.ALL,
            index=0,
        )
        if isinstance(t, TurnTrigger):
            out["turn"] = t.turn
        elif isinstance(t, ThresholdTrigger):
            out.update(variable=_pk.TRIGGER_VARS.index(t.variable), op=_pk.OPS.index(t.op), level=t.value)
        out.update(self.payload_numbers(config, where, policies))
        return out

    #: the payload field stored as the slot's ``value`` when that is all the type stores
    value_field: ClassVar[str | None] = None

    def payload_numbers(self, config, where, policies) -> dict:
        """The payload's slot numbers; the default stores ``value_field`` as ``value``."""
        if self.value_field is None:
            raise NotImplementedError(f"{type(self).__name__}: define payload_numbers or value_field")
        return {"value": getattr(self.payload, self.value_field)}


class RegenShockSpec(ArenaSpec):
    """``regen_shock``: r <- r x factor (drought f < 1, boom f > 1)."""

    type: Literal["regen_shock"]
    example: ClassVar[dict[str, Any]] = {"factor": 0.5}
    payload: FactorPayload
    value_field: ClassVar[str | None] = "factor"


class RegenSetSpec(ArenaSpec):
    """``regen_set``: r <- value."""

    type: Literal["regen_set"]
    example: ClassVar[dict[str, Any]] = {"value": 0.1}
    payload: RegenSetPayload
    value_field: ClassVar[str | None] = "value"


class CommonsShockSpec(ArenaSpec):
    """``commons_shock``: S <- max(S + amount, 0)."""

    type: Literal["commons_shock"]
    example: ClassVar[dict[str, Any]] = {"amount": -5.0}
    payload: CommonsPayload
    value_field: ClassVar[str | None] = "amount"


class CapacityShockSpec(ArenaSpec):
    """``capacity_shock``: K <- K x factor."""

    type: Literal["capacity_shock"]
    example: ClassVar[dict[str, Any]] = {"factor": 0.8}
    payload: FactorPayload
    value_field: ClassVar[str | None] = "factor"


class WealthShockSpec(ArenaSpec):
    """``wealth_shock``: multiplicative (factor) or additive (amount), one player or all."""

    type: Literal["wealth_shock"]
    example: ClassVar[dict[str, Any]] = {"factor": 0.5, "player": 0}
    payload: WealthPayload

    def payload_numbers(self, config, where, policies):
        p = self.payload
        mult = p.factor is not None
        return {
            "value": p.factor if mult else p.amount,
            "mode": 0 if mult else 1,
            "player": _player_index(p.player, config, where),
        }


class StrategyOverrideSpec(ArenaSpec):
    """``strategy_override``: the player's decision function is replaced from that turn on."""

    type: Literal["strategy_override"]
    example: ClassVar[dict[str, Any]] = {"player": 0, "strategy": "aggressive"}
    payload: OverridePayload

    def payload_numbers(self, config, where, policies):
        pol = BUILTINS[self.payload.strategy] if isinstance(self.payload.strategy, str) else self.payload.strategy
        index = policies.index(pol) if pol in policies else 0
        return {"player": _player_index(self.payload.player, config, where), "index": index}


class ObservabilityFlipSpec(ArenaSpec):
    """``observability_flip``: toggle (or set) one observation variable's visibility."""

    type: Literal["observability_flip"]
    example: ClassVar[dict[str, Any]] = {"variable": "commonsStock"}
    payload: FlipPayload

    def check(self, config, where: str) -> None:
        super().check(config, where)
        eng = ENGINES[config.model.engine_mode]
        produced = set(eng.variables) | set(OWN_VARS) | set(PEER_VARS) | {"nPlayers"}
        if self.payload.variable not in produced:
            raise ValueError(
                f"{where}.payload.variable: {self.payload.variable!r} is not produced by "
                f"engineMode={config.model.engine_mode!r}"
            )

    def payload_numbers(self, config, where, policies):
        v = self.payload.visible
        return {"index": _OBS_VARS.index(self.payload.variable), "mode": 0 if v is None else (1 if v else 2)}


class ThresholdShiftSpec(ArenaSpec):
    """``threshold_shift``: T <- max(T + delta, 0), or T <- value."""

    type: Literal["threshold_shift"]
    example: ClassVar[dict[str, Any]] = {"delta": 1.0}
    payload: ThresholdPayload

    def payload_numbers(self, config, where, policies):
        p = self.payload
        return {"value": p.delta if p.delta is not None else p.value, "mode": 0 if p.delta is not None else 1}


#: the config side of the perturbation type registry (kernels/registry.py): a Table A.1 type's
#: spec model; bdpd_jax.config.perturbations.register_perturbation fills it with the kernel side
ARENA_SPECS: Registry[type[ArenaSpec]] = Registry("type", "perturbation type")
for _spec in (
    RegenShockSpec,
    RegenSetSpec,
    CommonsShockSpec,
    CapacityShockSpec,
    WealthShockSpec,
    StrategyOverrideSpec,
    ObservabilityFlipSpec,
    ThresholdShiftSpec,
):
    ARENA_SPECS.register(get_args(_spec.model_fields["type"].annotation)[0], _spec)
