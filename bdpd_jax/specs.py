"""Perturbation specs: the seed's JSON form ``{id, type, trigger, payload}`` (000_* 2.4).

Each perturbation ``type`` is one pydantic model registered in :data:`SPEC_TYPES`; the
config's ``perturbations`` list is parsed by :func:`parse_perturbation`, which dispatches on
``type`` and names the list index, the field and the value of any rejection. Adding a type
is one model plus one :func:`register_spec` call.

This file defines the governance types ``sanction`` and ``sanction_graduated`` and the
``pact_violation`` trigger; other perturbation types register themselves the same way.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .kernels import pacts as _pacts
from .limits import MAX_LADDER, MAX_TURNS

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)

SPEC_TYPES: dict[str, type[BaseModel]] = {}


def register_spec(type_name: str, model: type[BaseModel]) -> type[BaseModel]:
    """Register the pydantic model of a perturbation ``type``."""
    SPEC_TYPES[type_name] = model
    return model


class PactViolationTrigger(BaseModel):
    """Fires once per pact violation (no fired-once dedup) of ``termType`` (any if omitted)."""

    model_config = _STRICT
    kind: Literal["pact_violation"]
    termType: str | None = None

    @field_validator("termType")
    @classmethod
    def _known_term(cls, v: str | None) -> str | None:
        if v is not None and v not in _pacts.term_names():
            raise ValueError(f"trigger.termType: unknown {v!r}; known: {list(_pacts.term_names())}")
        return v


class SanctionPayload(BaseModel):
    model_config = _STRICT
    amount: float = Field(ge=0)
    reason: str | None = None


class GraduatedPayload(BaseModel):
    model_config = _STRICT
    ladder: list[float] = Field(min_length=1, max_length=MAX_LADDER)
    reason: str | None = None

    @field_validator("ladder")
    @classmethod
    def _amounts(cls, v: list[float]) -> list[float]:
        for i, x in enumerate(v):
            if not math.isfinite(x) or x < 0:
                raise ValueError(f"payload.ladder[{i}]: must be a finite amount >= 0, got {x!r}")
        return v


class SanctionSpec(BaseModel):
    """``sanction``: deduct ``payload.amount`` from the violator's privateResource."""

    model_config = _STRICT
    id: str
    type: Literal["sanction"]
    trigger: PactViolationTrigger
    payload: SanctionPayload

    @property
    def ladder(self) -> list[float]:
        return [self.payload.amount]


class GraduatedSanctionSpec(BaseModel):
    """``sanction_graduated``: the k-th violation costs ``ladder[min(k-1, len-1)]``."""

    model_config = _STRICT
    id: str
    type: Literal["sanction_graduated"]
    trigger: PactViolationTrigger
    payload: GraduatedPayload

    @property
    def ladder(self) -> list[float]:
        return list(self.payload.ladder)


register_spec("sanction", SanctionSpec)
register_spec("sanction_graduated", GraduatedSanctionSpec)
SANCTION_TYPES: tuple[str, ...] = ("sanction", "sanction_graduated")


def parse_perturbation(raw: Any, index: int = 0) -> BaseModel:
    """Validate one spec (a dict or an already-built model). ValueError names the field."""
    where = f"perturbations[{index}]"
    if isinstance(raw, BaseModel):
        if type(raw) not in SPEC_TYPES.values():
            raise ValueError(f"{where}: {type(raw).__name__} is not a registered perturbation spec")
        return raw
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a spec must be an object {{id, type, trigger, payload}}, got {raw!r}")
    kind = raw.get("type")
    if not isinstance(kind, str) or kind not in SPEC_TYPES:
        raise ValueError(f"{where}.type: unknown perturbation type {kind!r}; known: {sorted(SPEC_TYPES)}")
    try:
        return SPEC_TYPES[kind].model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise ValueError(f"{where}.{loc}: {first['msg']} (got {first.get('input')!r})") from None


def parse_perturbations(raw: list) -> list[BaseModel]:
    """Validate a whole list: each spec, then unique ids."""
    specs = [parse_perturbation(r, i) for i, r in enumerate(raw)]
    seen: set[str] = set()
    for i, s in enumerate(specs):
        sid = getattr(s, "id", None)
        if sid is not None:
            if sid in seen:
                raise ValueError(f"perturbations[{i}].id: duplicate id {sid!r}")
            seen.add(sid)
    return specs


# ---------------------------------------------------------------------------------------
# Arena perturbations of Table A.1 (004_* A.1.1), fired at a turn or on a threshold
# condition, at most once each (kernels/perturb.py). docs/semantics.md §10.
# ---------------------------------------------------------------------------------------
from typing import Annotated, Union  # noqa: E402

from pydantic import model_validator  # noqa: E402

from .kernels import perturb as _pk  # noqa: E402
from .kernels.params import OBS_VARS as _OBS_VARS  # noqa: E402


class TurnTrigger(BaseModel):
    """Fire at the start of turn ``turn`` (1-based), before players observe."""

    model_config = _STRICT
    kind: Literal["turn"]
    turn: int = Field(ge=1, le=MAX_TURNS)


class ThresholdTrigger(BaseModel):
    """Fire at the start of the first turn where ``variable op value`` holds (state as it
    stands then). Variables: kernels.perturb.TRIGGER_VARS; ops: <, <=, >, >=."""

    model_config = _STRICT
    kind: Literal["threshold"]
    variable: Literal[_pk.TRIGGER_VARS]  # type: ignore[valid-type]
    op: Literal["<", "<=", ">", ">="]
    value: float


class ManualTrigger(BaseModel):
    """Never fires by itself: the owner fires it by id (``POST /api/arenas/:id/perturb``)."""

    model_config = _STRICT
    kind: Literal["manual"]


StandardTrigger = Annotated[Union[TurnTrigger, ThresholdTrigger, ManualTrigger], Field(discriminator="kind")]


class FactorPayload(BaseModel):
    model_config = _STRICT
    factor: float = Field(ge=0)


class RegenSetPayload(BaseModel):
    model_config = _STRICT
    value: float = Field(ge=0)


class CommonsPayload(BaseModel):
    model_config = _STRICT
    amount: float  # signed: + adds stock, - removes it (clamped at 0)


class WealthPayload(BaseModel):
    """Exactly one of ``factor`` (w <- w x factor) or ``amount`` (w <- max(w + amount, 0));
    ``player`` (index or name) or None for every player."""

    model_config = _STRICT
    factor: float | None = Field(None, ge=0)
    amount: float | None = None
    player: int | str | None = None

    @model_validator(mode="after")
    def _one_of(self) -> "WealthPayload":
        if (self.factor is None) == (self.amount is None):
            raise ValueError("payload: give exactly one of factor (multiplicative) or amount (additive)")
        return self


class OverridePayload(BaseModel):
    """From the firing turn on, ``player`` (index or name; None = all) plays ``strategy``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, arbitrary_types_allowed=True)
    player: int | str | None
    strategy: Any  # a built-in name or a bdpd_jax.Policy

    @field_validator("strategy")
    @classmethod
    def _known(cls, v: Any) -> Any:
        from .kernels.policies import BUILTINS, Policy

        if not (isinstance(v, Policy) or (isinstance(v, str) and v in BUILTINS)):
            raise ValueError(f"payload.strategy: unknown strategy {v!r}; known: {sorted(BUILTINS)}")
        if isinstance(v, Policy):
            from .policy_check import check_policy_fields

            check_policy_fields(v, "payload.strategy")
        return v


class FlipPayload(BaseModel):
    """Set ``variable``'s visibility (``visible`` true/false) or toggle it (omitted)."""

    model_config = _STRICT
    variable: Literal[_OBS_VARS]  # type: ignore[valid-type]
    visible: bool | None = None


class ThresholdPayload(BaseModel):
    """Exactly one of ``delta`` (T <- max(T + delta, 0)) or ``value`` (T <- value)."""

    model_config = _STRICT
    delta: float | None = None
    value: float | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _one_of(self) -> "ThresholdPayload":
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


class ArenaSpec(BaseModel):
    """Common part of the Table A.1 specs: ``check`` runs at config time, ``slot`` compiles."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, arbitrary_types_allowed=True)
    id: str
    trigger: StandardTrigger

    def check(self, config, where: str) -> None:
        engine_name = config.model.engineMode
        from .kernels.engines import ENGINES

        eng = ENGINES[engine_name]
        if not _pk.supported(eng, self.type):
            raise ValueError(
                f"{where}.type: {self.type!r} acts on the engine's {_pk.perturbation_type(self.type).requires!r}, which "
                f"engineMode={engine_name!r} does not have (docs/semantics.md §10 lists what each "
                f"type acts on per engine)"
            )
        t = self.trigger
        if isinstance(t, ThresholdTrigger) and t.variable in _pk.ENGINE_TRIGGER_VARS and t.variable not in eng.variables:
            raise ValueError(
                f"{where}.trigger.variable: {t.variable!r} is not produced by engineMode={engine_name!r} "
                f"(it produces {list(eng.variables)})"
            )
        if config.players is not None:
            self.numbers(config, where)

    def numbers(self, config, where: str, policies: tuple = ()) -> dict:
        """This spec's slot as plain numbers (kernels.perturb.PerturbParams fields)."""
        t = self.trigger
        out = dict(code=_pk.type_code(self.type), trigger=_pk.TRIGGER_KINDS.index(t.kind), turn=0, variable=0,
                   op=0, level=0.0, value=0.0, mode=0, player=_pk.ALL, index=0)
        if isinstance(t, TurnTrigger):
            out["turn"] = t.turn
        elif isinstance(t, ThresholdTrigger):
            out.update(variable=_pk.TRIGGER_VARS.index(t.variable), op=_pk.OPS.index(t.op), level=t.value)
        out.update(self.payload_numbers(config, where, policies))
        return out

    def payload_numbers(self, config, where, policies) -> dict:
        raise NotImplementedError


class RegenShockSpec(ArenaSpec):
    """``regen_shock``: r <- r x factor (drought f < 1, boom f > 1)."""

    type: Literal["regen_shock"]
    payload: FactorPayload

    def payload_numbers(self, config, where, policies):
        return {"value": self.payload.factor}


class RegenSetSpec(ArenaSpec):
    """``regen_set``: r <- value."""

    type: Literal["regen_set"]
    payload: RegenSetPayload

    def payload_numbers(self, config, where, policies):
        return {"value": self.payload.value}


class CommonsShockSpec(ArenaSpec):
    """``commons_shock``: S <- max(S + amount, 0)."""

    type: Literal["commons_shock"]
    payload: CommonsPayload

    def payload_numbers(self, config, where, policies):
        return {"value": self.payload.amount}


class CapacityShockSpec(ArenaSpec):
    """``capacity_shock``: K <- K x factor."""

    type: Literal["capacity_shock"]
    payload: FactorPayload

    def payload_numbers(self, config, where, policies):
        return {"value": self.payload.factor}


class WealthShockSpec(ArenaSpec):
    """``wealth_shock``: multiplicative (factor) or additive (amount), one player or all."""

    type: Literal["wealth_shock"]
    payload: WealthPayload

    def payload_numbers(self, config, where, policies):
        p = self.payload
        mult = p.factor is not None
        return {"value": p.factor if mult else p.amount, "mode": 0 if mult else 1,
                "player": _player_index(p.player, config, where)}


class StrategyOverrideSpec(ArenaSpec):
    """``strategy_override``: the player's decision function is replaced from that turn on."""

    type: Literal["strategy_override"]
    payload: OverridePayload

    def payload_numbers(self, config, where, policies):
        from .kernels.policies import BUILTINS

        pol = BUILTINS[self.payload.strategy] if isinstance(self.payload.strategy, str) else self.payload.strategy
        index = policies.index(pol) if pol in policies else 0
        return {"player": _player_index(self.payload.player, config, where), "index": index}


class ObservabilityFlipSpec(ArenaSpec):
    """``observability_flip``: toggle (or set) one observation variable's visibility."""

    type: Literal["observability_flip"]
    payload: FlipPayload

    def check(self, config, where: str) -> None:
        super().check(config, where)
        from .kernels.engines import ENGINES
        from .kernels.params import OWN_VARS, PEER_VARS

        eng = ENGINES[config.model.engineMode]
        produced = set(eng.variables) | set(OWN_VARS) | set(PEER_VARS) | {"nPlayers"}
        if self.payload.variable not in produced:
            raise ValueError(
                f"{where}.payload.variable: {self.payload.variable!r} is not produced by "
                f"engineMode={config.model.engineMode!r}"
            )

    def payload_numbers(self, config, where, policies):
        v = self.payload.visible
        return {"index": _OBS_VARS.index(self.payload.variable), "mode": 0 if v is None else (1 if v else 2)}


class ThresholdShiftSpec(ArenaSpec):
    """``threshold_shift``: T <- max(T + delta, 0), or T <- value."""

    type: Literal["threshold_shift"]
    payload: ThresholdPayload

    def payload_numbers(self, config, where, policies):
        p = self.payload
        return {"value": p.delta if p.delta is not None else p.value, "mode": 0 if p.delta is not None else 1}


ARENA_SPECS: dict[str, type[ArenaSpec]] = {
    "regen_shock": RegenShockSpec,
    "regen_set": RegenSetSpec,
    "commons_shock": CommonsShockSpec,
    "capacity_shock": CapacityShockSpec,
    "wealth_shock": WealthShockSpec,
    "strategy_override": StrategyOverrideSpec,
    "observability_flip": ObservabilityFlipSpec,
    "threshold_shift": ThresholdShiftSpec,
}
for _name, _model in ARENA_SPECS.items():
    register_spec(_name, _model)


def register_perturbation(name: str, apply, spec: type[ArenaSpec], **kernel) -> type[ArenaSpec]:
    """Add a perturbation type end to end with one call: its kernel ``apply`` (registered in
    kernels/perturb_registry.py with ``kernel`` = requires / engine_field / target / label /
    description) and its config model ``spec`` (an :class:`ArenaSpec` with ``type:
    Literal[name]``, a payload and ``payload_numbers``). The config, ``simulate``, the
    results frames and the live host then know it."""
    from .kernels.perturb_registry import register_perturbation as register_kernel

    if name in SPEC_TYPES:
        raise ValueError(f"type: perturbation type {name!r} is already registered")
    register_kernel(name, apply, **kernel)
    ARENA_SPECS[name] = spec
    register_spec(name, spec)
    return spec


def check_perturbations(config) -> None:
    """Config-time checks against the engine and players (ValueError naming the spec)."""
    for i, s in enumerate(config.perturbations):
        check = getattr(s, "check", None)
        if check is not None:
            check(config, f"perturbations[{i}]")


def arena_specs(config) -> list[ArenaSpec]:
    """The config's Table A.1 specs, in list order (the order same-turn firings apply)."""
    return [s for s in config.perturbations if s.type in ARENA_SPECS]


def override_strategies(specs) -> tuple:
    """Strategies a strategy_override may switch to (compiled into Game.policies)."""
    return tuple(s.payload.strategy for s in specs if s.type == "strategy_override")


def compile_specs(specs, config, policies: tuple, n_slots: int | None = None) -> "_pk.PerturbParams":
    """Slots (leaves [P]) of ``specs``; padding slots are manual triggers that never fire."""
    import jax.numpy as jnp

    from .kernels.params import farr

    rows = [s.numbers(config, f"perturbations[{s.id}]", policies) for s in specs]
    p = len(rows) if n_slots is None else n_slots
    if p < len(rows):
        raise ValueError(f"n_slots: {p} is fewer than the {len(rows)} perturbation specs")
    pad = dict(code=0, trigger=_pk.MANUAL, turn=0, variable=0, op=0, level=0.0, value=0.0, mode=0,
               player=_pk.ALL, index=0)
    rows = rows + [pad] * (p - len(rows))
    ints = ("code", "trigger", "turn", "variable", "op", "mode", "player", "index")
    cols = {k: [r[k] for r in rows] for k in pad}
    return _pk.PerturbParams(**{k: (jnp.asarray(v, jnp.int32) if k in ints else farr(v)) for k, v in cols.items()})


def compile_spec(spec, config, policies: tuple) -> "_pk.PerturbParams":
    """One owner-fired spec (scalar leaves) for kernels.perturb.apply_perturbation."""
    import jax

    spec = parse_perturbation(spec) if not isinstance(spec, BaseModel) else spec
    if spec.type not in ARENA_SPECS:
        raise ValueError(f"spec.type: {spec.type!r} cannot be fired ad hoc; known: {list(ARENA_SPECS)}")
    spec.check(config, "spec")
    if spec.type == "strategy_override":
        from .kernels.policies import BUILTINS

        s = spec.payload.strategy
        if (BUILTINS[s] if isinstance(s, str) else s) not in policies:
            raise ValueError(f"spec.payload.strategy: {s!r} is not compiled into this game; "
                             "list it in build(..., extra_policies=...)")
    return jax.tree_util.tree_map(lambda x: x[0], compile_specs([spec], config, policies))


def perturb_layer(config, perturbable: bool = False, n_slots: int | None = None, types: tuple | None = None):
    """The static PerturbLayer of a config (None when it has no Table A.1 specs and not
    ``perturbable``). ``types``/``n_slots``: a sweep's union/largest, to share one program."""
    from .kernels.engines import ENGINES

    specs = arena_specs(config)
    if not specs and not perturbable and not n_slots and not types:
        return None
    eng = ENGINES[config.model.engineMode]
    present = {s.type for s in specs} | set(types or ())
    if perturbable:
        present |= {t for t in _pk.type_names() if _pk.supported(eng, t)}
    ordered = tuple(t for t in _pk.type_names() if t in present)
    return _pk.PerturbLayer(types=ordered, n_slots=len(specs) if n_slots is None else n_slots)
