"""Perturbation specs: the seed's JSON form ``{id, type, trigger, payload}`` (000_* 2.4).

Each perturbation ``type`` is one pydantic model registered in :data:`SPEC_TYPES`; the
config's ``perturbations`` list is parsed by :func:`parse_perturbation`, which dispatches on
``type`` and names the list index, the field and the value of any rejection. Adding a type
is one model plus one :func:`register_spec` call.

This file defines the governance types ``sanction`` and ``sanction_graduated`` and the
``pact_violation`` trigger and registers the Table A.1 types (bdpd_jax/config/perturbation_types.py);
a Table A.1 type added later is one :class:`ArenaSpec` plus one :func:`register_perturbation` call.
Compiling specs into the perturbation layer's slots is prepare's: bdpd_jax/prepare/perturbations.py.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from ..kernels import pacts as _pacts
from ..kernels.perturb_registry import Apply
from ..kernels.perturb_registry import register_perturbation as register_kernel
from ..kernels.perturb_registry import unregister_perturbation as unregister_kernel
from ..kernels.registry import Registry
from .base import ConfigModel
from .limits import MAX_LADDER, Id, Text
from .perturbation_types import (  # noqa: F401 (re-exported: the Table A.1 models are specs too)
    ARENA_SPECS,
    STRICT,
    ArenaSpec,
    CapacityShockSpec,
    CommonsPayload,
    CommonsShockSpec,
    FactorPayload,
    FlipPayload,
    ManualTrigger,
    ObservabilityFlipSpec,
    OverridePayload,
    RegenSetPayload,
    RegenSetSpec,
    RegenShockSpec,
    StandardTrigger,
    StrategyOverrideSpec,
    ThresholdPayload,
    ThresholdShiftSpec,
    ThresholdTrigger,
    TurnTrigger,
    WealthPayload,
    WealthShockSpec,
)

# an ArenaConfig: config/game.py imports this module, so naming the class here would be an import
# cycle (tests/test_architecture.py forbids them, type-checking imports included)
Config = Any

#: every perturbation spec model by ``type`` (sanctions and Table A.1 types): what the config parses
SPEC_TYPES: Registry[type[BaseModel]] = Registry("type", "perturbation type")


def register_spec(type_name: str, model: type[BaseModel]) -> type[BaseModel]:
    """Register the pydantic model of a perturbation ``type``."""
    return SPEC_TYPES.register(type_name, model)


class PactViolationTrigger(ConfigModel):
    """Fires once per pact violation (no fired-once dedup) of ``termType`` (any if omitted)."""

    model_config = STRICT
    kind: Literal["pact_violation"]
    term_type: Id | None = None

    @field_validator("term_type")
    @classmethod
    def _known_term(cls, v: str | None) -> str | None:
        if v is not None and v not in _pacts.term_names():
            raise ValueError(f"trigger.termType: unknown {v!r}; known: {list(_pacts.term_names())}")
        return v


class SanctionPayload(ConfigModel):
    model_config = STRICT
    amount: float = Field(ge=0)
    reason: Text | None = None


class GraduatedPayload(ConfigModel):
    model_config = STRICT
    ladder: list[float] = Field(min_length=1, max_length=MAX_LADDER)
    reason: Text | None = None

    @field_validator("ladder")
    @classmethod
    def _amounts(cls, v: list[float]) -> list[float]:
        for i, x in enumerate(v):
            if not math.isfinite(x) or x < 0:
                raise ValueError(f"payload.ladder[{i}]: must be a finite amount >= 0, got {x!r}")
        return v


class SanctionSpec(ConfigModel):
    """``sanction``: deduct ``payload.amount`` from the violator's privateResource."""

    model_config = STRICT
    id: Id
    type: Literal["sanction"]
    trigger: PactViolationTrigger
    payload: SanctionPayload

    @property
    def ladder(self) -> list[float]:
        return [self.payload.amount]


class GraduatedSanctionSpec(ConfigModel):
    """``sanction_graduated``: the k-th violation costs ``ladder[min(k-1, len-1)]``."""

    model_config = STRICT
    id: Id
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
        raise ValueError(f"{where}.{loc}: {first['msg']} (got {first.get('input')!r:.80})") from None


def parse_perturbations(raw: list[Any]) -> list[BaseModel]:
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


for _name, _model in ARENA_SPECS.items():
    register_spec(_name, _model)


def register_perturbation(name: str, apply: Apply, spec: type[ArenaSpec], **kernel: Any) -> type[ArenaSpec]:
    """Add a perturbation type end to end with one call: its kernel ``apply`` (registered in
    kernels/perturb_registry.py with ``kernel`` = requires / engine_field / target / label /
    description) and its config model ``spec`` (an :class:`ArenaSpec` with ``type:
    Literal[name]``, an ``example`` payload, a payload and ``payload_numbers``). The config,
    ``simulate``, the results frames, the live host and the server then know it."""
    if name in SPEC_TYPES:
        raise ValueError(f"type: perturbation type {name!r} is already registered")
    register_kernel(name, apply, **kernel)
    register_spec(name, spec)
    return ARENA_SPECS.register(name, spec)


def unregister_perturbation(name: str) -> None:
    """Undo :func:`register_perturbation` (the last registered type only; for tests that
    must leave the registries as they found them)."""
    if name not in ARENA_SPECS:
        raise ValueError(f"type: {name!r} is not a registered perturbation type")
    for registry in (ARENA_SPECS, SPEC_TYPES):
        registry.unregister(name)
    unregister_kernel(name)


def check_perturbations(config: Config) -> None:
    """Config-time checks against the engine and players (ValueError naming the spec)."""
    for i, s in enumerate(config.perturbations):
        check = getattr(s, "check", None)
        if check is not None:
            check(config, f"perturbations[{i}]")


def arena_specs(config: Config) -> list[ArenaSpec]:
    """The config's Table A.1 specs, in list order (the order same-turn firings apply)."""
    return [s for s in config.perturbations if isinstance(s, ArenaSpec) and s.type in ARENA_SPECS]


def override_strategies(specs: list[ArenaSpec]) -> tuple[Any, ...]:
    """Strategies a strategy_override may switch to (compiled into Game.policies)."""
    return tuple(s.payload.strategy for s in specs if s.type == "strategy_override")


__all__ = [
    "ARENA_SPECS",
    "SANCTION_TYPES",
    "SPEC_TYPES",
    "STRICT",
    "ArenaSpec",
    "CapacityShockSpec",
    "CommonsPayload",
    "CommonsShockSpec",
    "FactorPayload",
    "FlipPayload",
    "GraduatedPayload",
    "GraduatedSanctionSpec",
    "ManualTrigger",
    "ObservabilityFlipSpec",
    "OverridePayload",
    "PactViolationTrigger",
    "RegenSetPayload",
    "RegenSetSpec",
    "RegenShockSpec",
    "SanctionPayload",
    "SanctionSpec",
    "StandardTrigger",
    "StrategyOverrideSpec",
    "ThresholdPayload",
    "ThresholdShiftSpec",
    "ThresholdTrigger",
    "TurnTrigger",
    "WealthPayload",
    "WealthShockSpec",
    "arena_specs",
    "check_perturbations",
    "override_strategies",
    "parse_perturbation",
    "parse_perturbations",
    "register_perturbation",
    "register_spec",
    "unregister_perturbation",
]
