"""Arena configuration: the seed's arena-creation payload (004_* A.2.1) plus a players list.

Validated with pydantic v2 before anything runs; every rejection names the field and the
value (pydantic's ValidationError is a ValueError). Unknown keys are rejected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import diffrax
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ..build.governance import needed_slots
from ..kernels.engines import ENGINES
from ..kernels.engines.logistic import DIE_DEFAULTS
from ..kernels.engines.seneca import DEFAULTS as SENECA
from ..kernels.engines.seneca import HARVEST_SCALE, SOLVERS
from ..kernels.observe import QUALITATIVE_VARS, SIGN_VARS, capacity
from ..kernels.params import OBS_VARS, OWN_VARS, PEER_VARS
from ..kernels.policies import BUILTINS, Policy
from ..kernels.schedule import SCHEDULERS
from .governance import PactConfig, TalkConfig, check_governance
from .limits import MAX_DIE_SIDES, MAX_PACT_SLOTS, MAX_PLAYERS, MAX_SPECS, MAX_TURNS, check_magnitudes
from .perturbations import check_perturbations, parse_perturbations
from .plugins import check_plugins, parse_plugins
from .policy_check import check_policy_fields

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)

NonNeg = Field(ge=0)


def known(where: str, what: str, v: str, registry: Mapping[str, Any]) -> str:
    """``v`` if the registry (read now, so later registrations count) has it, else ValueError."""
    if v not in registry:
        raise ValueError(f"{where}: unknown {what} {v!r}; known: {sorted(registry)}")
    return v


class CollapseDie(BaseModel):
    """The collapse die of the hidden reserve: a roll <= successThreshold draws one unit."""

    model_config = _STRICT
    sides: int = Field(DIE_DEFAULTS["sides"], ge=1, le=MAX_DIE_SIDES)
    successThreshold: int = Field(DIE_DEFAULTS["successThreshold"], ge=0)

    @model_validator(mode="after")
    def _threshold_within_sides(self) -> CollapseDie:
        if self.successThreshold > self.sides:
            raise ValueError(f"collapseDie.successThreshold: {self.successThreshold} exceeds sides={self.sides}")
        return self


class SenecaConfig(BaseModel):
    """Bardi (2011) R-C-P parameters; defaults reproduce the seed's peak timing (docs/semantics.md)."""

    model_config = _STRICT
    k1: float = Field(SENECA["k1"], ge=0)
    k2: float = Field(SENECA["k2"], ge=0)
    l1: float = Field(SENECA["l1"], ge=0)
    l2: float = Field(SENECA["l2"], ge=0)
    l3: float = Field(SENECA["l3"], ge=0)
    capitalSeed: float = Field(SENECA["capitalSeed"], ge=0)
    pollutionSeed: float = Field(SENECA["pollutionSeed"], ge=0)
    dt: float = Field(SENECA["dt"], gt=0)
    substeps: int = Field(SENECA["substeps"], ge=1, le=1000)
    solver: str = SENECA["solver"]  # one of kernels.engines.seneca.SOLVERS (checked below)
    collapseFraction: float = Field(SENECA["collapseFraction"], ge=0, lt=1)
    # R units per unit of the heuristics' capacity(w): requests, harvests and wealth are in
    # R units; a built-in player asks up to harvestScale x capacity(w) (docs/semantics.md §9).
    harvestScale: float = Field(SENECA["harvestScale"], gt=0)
    # How constant steps are taken: diffrax solver steps, diffrax's Butcher tableau unrolled
    # (fast for RK solvers), or a full diffeqsolve per turn (docs/semantics.md §9).
    integrator: Literal["steps", "tableau", "diffeqsolve"] = SENECA["integrator"]
    adaptive: bool = SENECA["adaptive"]  # diffeqsolve with a PID controller (rtol/atol); else constant steps
    rtol: float = Field(SENECA["rtol"], gt=0)
    atol: float = Field(SENECA["atol"], gt=0)
    maxSteps: int = Field(SENECA["maxSteps"], ge=1, le=100000)

    @field_validator("solver")
    @classmethod
    def _known_solver(cls, v: str) -> str:
        return known("seneca.solver", "solver", v, SOLVERS)

    @model_validator(mode="after")
    def _adaptive_needs_error_estimate(self) -> SenecaConfig:
        if self.adaptive and not issubclass(SOLVERS[self.solver], diffrax.AbstractAdaptiveSolver):
            ok = [k for k, v in SOLVERS.items() if issubclass(v, diffrax.AbstractAdaptiveSolver)]
            raise ValueError(f"seneca.solver: adaptive step control needs a solver with an error estimate, "
                             f"got {self.solver!r} with adaptive=true; use one of {ok}")
        return self


class ModelConfig(BaseModel):
    """The ``model`` block. Defaults are the seed's logistic example."""

    model_config = _STRICT
    name: str = "fishery_commons_v1"
    engineMode: str = "logistic"
    scheduler: str = "simultaneous"
    maxPlayers: int = Field(4, ge=1, le=MAX_PLAYERS)  # bounds: bdpd_jax/config/limits.py
    minPlayers: int = Field(2, ge=1)
    maxTurns: int = Field(30, ge=1, le=MAX_TURNS)
    commonsInitial: float | None = Field(None, ge=0)
    commonsCapacity: float = Field(150.0, gt=0)
    regenRate: float = Field(0.12, ge=0)
    threshold: float = Field(10.0, ge=0)
    useHiddenReserve: bool | None = None
    hiddenReserveInitial: float | None = Field(None, ge=0)
    collapseDie: CollapseDie | None = None
    seneca: SenecaConfig | None = None

    @field_validator("engineMode")
    @classmethod
    def _known_engine(cls, v: str) -> str:
        return known("model.engineMode", "engine", v, ENGINES)

    @field_validator("scheduler")
    @classmethod
    def _known_scheduler(cls, v: str) -> str:
        return known("model.scheduler", "scheduler", v, SCHEDULERS)

    @model_validator(mode="after")
    def _engine_defaults(self) -> ModelConfig:
        if self.minPlayers > self.maxPlayers:
            raise ValueError(f"model.minPlayers: {self.minPlayers} > maxPlayers={self.maxPlayers}")
        if "threshold" in ENGINES[self.engineMode].features and self.threshold > self.commonsCapacity:
            raise ValueError(f"model.threshold: {self.threshold} is above commonsCapacity={self.commonsCapacity} "
                             "(the commons would count as collapsed at any stock it can hold)")
        seneca = self.engineMode == "seneca"
        if seneca:
            # None/False/0 are what this validator itself fills in, so a dumped config
            # validates again; anything asking for the mechanism is rejected.
            for name in ("useHiddenReserve", "hiddenReserveInitial", "collapseDie"):
                v = getattr(self, name)
                if v not in (None, False, 0, 0.0):
                    raise ValueError(
                        f"model.{name}: the hidden reserve and collapse die are logistic-only "
                        f"(004_* A.2.1); got {v!r} on engineMode='seneca'"
                    )
            self.seneca = self.seneca or SenecaConfig()
            self.useHiddenReserve = False
        elif self.seneca is not None:
            raise ValueError(f"model.seneca: only used with engineMode='seneca', got engineMode={self.engineMode!r}")
        if self.commonsInitial is None:
            self.commonsInitial = 1.0 if seneca else 150.0
        if self.useHiddenReserve is None:
            self.useHiddenReserve = True
        if self.hiddenReserveInitial is None:
            self.hiddenReserveInitial = 20.0 if not seneca else 0.0
        if self.collapseDie is None and not seneca:
            self.collapseDie = CollapseDie()
        return self


class ObsVar(BaseModel):
    """One observability entry: visible, relative Gaussian noise, resolution."""

    model_config = _STRICT
    visible: bool = True
    noise: float = Field(0.0, ge=0)
    resolution: Literal["exact", "qualitative", "sign"] = "exact"


class PlayerConfig(BaseModel):
    """One player: strategy (a built-in name or a bdpd_jax.Policy), its parameters, wealth."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, arbitrary_types_allowed=True)
    strategy: str | Policy = "conservative"
    name: str | None = None
    intensity: float = Field(0.5, gt=0, le=1)
    reductionFactor: float = Field(1.0, ge=0)
    privateResource: float = Field(30.0, ge=0)
    talk: TalkConfig | None = None  # scripted cheap talk (bdpd_jax/config/governance.py)

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, v: str | Policy) -> str | Policy:
        if isinstance(v, str) and v not in BUILTINS:
            raise ValueError(f"players[].strategy: unknown strategy {v!r}; known: {sorted(BUILTINS)}")
        if isinstance(v, Policy):
            check_policy_fields(v, "players[].strategy")
        return v

    @property
    def strategy_name(self) -> str:
        return self.strategy if isinstance(self.strategy, str) else self.strategy.name


class ArenaConfig(BaseModel):
    """The whole arena: the seed payload (model, observability, agentTimeout) plus players."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, arbitrary_types_allowed=True)
    model: ModelConfig = Field(default_factory=ModelConfig)
    observability: dict[str, ObsVar] = Field(default_factory=dict)
    agentTimeout: int = Field(30000, ge=1)
    players: list[PlayerConfig] | None = None
    pacts: list[PactConfig] = Field(default_factory=list, max_length=MAX_PACT_SLOTS)  # pre-declared pacts
    # specs {id, type, trigger, payload} (specs.py)
    perturbations: list[Any] = Field(default_factory=list, max_length=MAX_SPECS)
    # governance plugins {type, id, ...} (plugins.py)
    plugins: list[Any] = Field(default_factory=list, max_length=MAX_SPECS)

    @field_validator("perturbations")
    @classmethod
    def _perturbation_specs(cls, v: list[Any]) -> list[Any]:
        return parse_perturbations(v)

    @field_validator("plugins")
    @classmethod
    def _plugin_specs(cls, v: list[Any]) -> list[Any]:
        return parse_plugins(v)

    @model_validator(mode="after")
    def _cross_checks(self, info: ValidationInfo) -> ArenaConfig:
        # every real number finite in float32 with room for a product (bdpd_jax/config/limits.py);
        # a sweep checks only its swept values (the walk costs several times the validation)
        if not (info.context or {}).get("magnitudes_checked"):
            check_magnitudes(self, "")
        engine = ENGINES[self.model.engineMode]
        produced = set(engine.variables) | set(OWN_VARS) | set(PEER_VARS) | {"nPlayers"}
        for name, spec in self.observability.items():
            if name not in OBS_VARS:
                raise ValueError(f"observability.{name}: unknown observation variable; known: {list(OBS_VARS)}")
            if name not in produced and spec.visible:
                raise ValueError(
                    f"observability.{name}: not produced by engineMode={self.model.engineMode!r} "
                    f"(it produces {sorted(produced)})"
                )
            if spec.resolution == "qualitative" and name not in QUALITATIVE_VARS:
                raise ValueError(
                    f"observability.{name}.resolution: 'qualitative' is defined for {list(QUALITATIVE_VARS)} only"
                )
            if spec.resolution == "sign" and name not in SIGN_VARS:
                raise ValueError(f"observability.{name}.resolution: 'sign' is defined for {list(SIGN_VARS)} only")
        if self.players is not None:
            check_governance(self.players, self.pacts)
            _check_harvest_scale(self.model, self.players)
            if needed_slots(self) > MAX_PACT_SLOTS:
                raise ValueError(f"pacts: {needed_slots(self)} pacts and scripted pledges/proposals need more than "
                                 f"{MAX_PACT_SLOTS} pact slots (bdpd_jax/config/limits.py)")
            n = len(self.players)
            if not self.model.minPlayers <= n <= self.model.maxPlayers:
                raise ValueError(
                    f"players: {n} players is outside [minPlayers={self.model.minPlayers}, "
                    f"maxPlayers={self.model.maxPlayers}]"
                )
        check_perturbations(self)  # Table A.1 specs against the engine and players (specs.py)
        if self.players is not None and self.plugins:
            check_plugins(self)
        return self

    @classmethod
    def load(cls, source: ArenaConfig | dict[str, Any] | str | Path) -> ArenaConfig:
        """Accept a config, a dict, a JSON string or a path to a JSON file."""
        if isinstance(source, ArenaConfig):
            return source
        if isinstance(source, dict):
            return cls.model_validate(source)
        if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith("{")):
            path = Path(source)
            if not path.is_file():
                raise ValueError(f"config: no such file {str(path)!r}")
            return cls.model_validate_json(path.read_text())
        return cls.model_validate_json(source)

    def require_players(self) -> list[PlayerConfig]:
        if not self.players:
            raise ValueError("players: a run needs a players list, e.g. [{'strategy': 'aggressive'}, ...]")
        return self.players


def _check_harvest_scale(model: ModelConfig, players: list[PlayerConfig]) -> None:
    """Seneca: the players' first-turn capacities, in R units, must leave some of R0.

    harvestScale x capacity(privateResource) summed over the players (``idle`` ones never
    harvest) is what capacity-bound heuristics take on turn 1; at or above commonsInitial the commons is gone at turn 1
    whatever the strategies (the failure docs/semantics.md §9 is designed against).
    """
    if model.engineMode != "seneca" or model.seneca is None:
        return
    scale = model.seneca.harvestScale
    total = scale * sum(float(capacity(p.privateResource)) for p in players if p.strategy_name != "idle")
    if model.commonsInitial is not None and total >= model.commonsInitial:
        raise ValueError(
            f"model.seneca.harvestScale: {scale!r} lets the {len(players)} players' capacities take "
            f"{total:.4g} R units on turn 1, >= commonsInitial={model.commonsInitial!r}: the commons would "
            f"collapse at once; harvestScale is R units per unit of capacity(w) = 1 + 0.05 w (default {HARVEST_SCALE})"
        )


def default_config() -> ArenaConfig:
    """The shipped default: the seed's logistic payload with 2 conservative + 2 aggressive."""
    path = Path(__file__).resolve().parent.parent / "data" / "default.json"
    return ArenaConfig.model_validate(json.loads(path.read_text()))
