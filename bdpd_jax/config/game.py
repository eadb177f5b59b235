"""Arena configuration: the seed's arena-creation payload (004_* A.2.1) plus a players list.

Validated with pydantic v2 before anything runs; every rejection names the field and the
value (pydantic's ValidationError is a ValueError). Unknown keys are rejected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import (
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError

from ..kernels.engines import ENGINES
from ..kernels.observe import QUALITATIVE_VARS, SIGN_VARS
from ..kernels.outcomes import METRIC_PLAYERS
from ..kernels.params import OBS_VARS, OWN_VARS, PEER_VARS
from ..kernels.policies import BUILTINS, Policy
from ..kernels.schedule import SCHEDULERS
from ..kernels.sustainability import THRESHOLD_PLAYERS
from .base import ConfigModel, wire_names
from .discussion import DiscussionConfig
from .engines import EngineConfig, engine_config_model
from .files import MAX_CONFIG_BYTES, read_text
from .governance import PactConfig, TalkConfig, check_governance, needed_slots
from .limits import MAX_PACT_SLOTS, MAX_PLAYERS, MAX_SPECS, MAX_TURNS, Label, Name, check_at_most, check_magnitudes
from .perturbations import check_perturbations, parse_perturbations
from .plugins import check_plugins, parse_plugins
from .policy_check import check_policy_fields

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)


def known(where: str, what: str, v: str, registry: Mapping[str, Any]) -> str:
    """``v`` if the registry (read now, so later registrations count) has it, else ValueError."""
    if v not in registry:
        raise ValueError(f"{where}: unknown {what} {v!r}; known: {sorted(registry)}")
    return v


def _engine_part(mode: str, given: dict[str, Any]) -> EngineConfig:
    """The engine's own fields of a ``model`` block, validated by the config model registered for
    ``mode``; an error names the field as the user wrote it (``model.<field>``)."""
    cls = engine_config_model(mode)
    try:
        return cls.model_validate(given)
    except ValidationError as e:
        er = e.errors()[0]
        loc = ".".join(str(x) for x in er["loc"])
        got = repr(er.get("input"))
        got = got if len(got) <= 80 else got[:77] + "..."  # a client's value, bounded in the message
        if er["type"] == "extra_forbidden":
            own = sorted(wire_names(cls))
            text = f"model.{loc}: not a field of engineMode={mode!r} (its own fields: {own}), got {got}"
        elif not loc:  # the engine model's own rule: its message names the field
            text = er["msg"].removeprefix("Value error, ")
        else:
            text = f"model.{loc}: {er['msg']} (engineMode={mode!r}), got {got}"
        # the inner error's type is kept: a type error stays a 422, a rule's ValueError a 400 (server/errors.py)
        raise PydanticCustomError(er["type"], "{text}", {"text": text}) from None


@cache
def _shared_keys() -> frozenset[str]:
    """The ``model`` block's keys that are ModelConfig's own (Python names and wire names)."""
    fields = {k: f for k, f in ModelConfig.model_fields.items() if k != "engine"}
    return frozenset(fields) | {f.alias for f in fields.values() if f.alias}


class ModelConfig(ConfigModel):
    """The ``model`` block: the fields every engine shares, declared here, and the engine's
    own fields as the typed ``engine`` field (``cfg.model.engine.regen_rate``): the config
    model registered for ``engineMode`` (bdpd_jax/config/engines/, read when called). On the
    wire the block is flat, as in the seed's payload: validation moves the engine's keys into
    ``engine`` and a dump puts them back (the edge; docs/semantics/records.md). Defaults are
    the seed's logistic example."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    name: Label = "fishery_commons_v1"
    engine_mode: Label = "logistic"
    scheduler: Label = "simultaneous"
    max_players: int = Field(4, ge=1, le=MAX_PLAYERS)  # bounds: bdpd_jax/config/limits.py
    min_players: int = Field(2, ge=1)
    max_turns: int = Field(30, ge=1, le=MAX_TURNS)
    # requests are floored to whole units before they are served (GovSim's integer asks); any engine
    whole_units: bool = False
    # players whose count divides the sustainability threshold (kernels/sustainability.py): GovSim's
    # code ("configured"), the players acting this turn ("present") or every player slot ("all")
    threshold_players: Label = "configured"
    # players GovSim's per-player outcomes average over: those present in the log, or every slot
    metric_players: Label = "present"
    # GovSim's analysis horizon: survival time of a run that never collapses; None: the run's length
    survival_horizon: int | None = Field(None, ge=1, le=MAX_TURNS)
    # the engine's own fields; SerializeAsAny: dumped by the registered model's fields, not the base's
    engine: SerializeAsAny[EngineConfig] = Field(
        default_factory=lambda data: engine_config_model(data["engine_mode"])()
    )

    #: fields whose own fields sit in this block on the wire (dump, paths of check_magnitudes)
    flat_fields: ClassVar[tuple[str, ...]] = ("engine",)

    @model_validator(mode="before")
    @classmethod
    def _nest_engine_fields(cls, data: Any) -> Any:
        """The flat wire block -> the shared fields plus ``engine`` (the engine's keys, validated).
        A Python caller may pass ``engine=`` a model of the engine's own (revalidated here)."""
        if not isinstance(data, dict):
            return data
        shared = _shared_keys()
        out = {k: v for k, v in data.items() if k in shared}
        given = {k: v for k, v in data.items() if k not in shared}
        if isinstance(given.get("engine"), EngineConfig):
            given = {**given.pop("engine").model_dump(exclude_unset=True), **given}
        mode = data.get("engineMode", data.get("engine_mode", cls.model_fields["engine_mode"].default))
        # an unknown engineMode: its field's error is the one reported (the placeholder never escapes)
        known_mode = isinstance(mode, str) and mode in ENGINES
        out["engine"] = _engine_part(mode, given) if known_mode else EngineConfig()
        return out

    @model_serializer(mode="wrap")
    def _flat_engine_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The dump's ``model`` block flat, as the wire has it: the engine's keys beside the shared ones."""
        out: dict[str, Any] = handler(self)
        part = out.pop("engine", None)
        return {**out, **part} if isinstance(part, dict) else out

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """The block's JSON schema as the wire has it: the shared keys, and the engine's as
        further keys (which ones depends on ``engineMode``)."""
        out = handler(schema)
        target = handler.resolve_ref_schema(out)
        target.get("properties", {}).pop("engine", None)
        target["additionalProperties"] = True
        return out

    @field_validator("engine_mode")
    @classmethod
    def _known_engine(cls, v: str) -> str:
        return known("model.engineMode", "engine", v, ENGINES)

    @field_validator("scheduler")
    @classmethod
    def _known_scheduler(cls, v: str) -> str:
        return known("model.scheduler", "scheduler", v, SCHEDULERS)

    @field_validator("threshold_players")
    @classmethod
    def _known_threshold_players(cls, v: str) -> str:
        return known("model.thresholdPlayers", "choice", v, dict.fromkeys(THRESHOLD_PLAYERS))

    @field_validator("metric_players")
    @classmethod
    def _known_metric_players(cls, v: str) -> str:
        return known("model.metricPlayers", "choice", v, dict.fromkeys(METRIC_PLAYERS))

    @model_validator(mode="after")
    def _player_bounds(self) -> ModelConfig:
        check_at_most(self.min_players, "model.minPlayers", self.max_players, "maxPlayers")
        return self


class ObsVar(ConfigModel):
    """One observability entry: visible, relative Gaussian noise, resolution."""

    model_config = _STRICT
    visible: bool = True
    noise: float = Field(0.0, ge=0)
    resolution: Literal["exact", "qualitative", "sign"] = "exact"

    @model_serializer(mode="wrap")
    def _unset_noise_stays_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """An entry that never set ``noise`` is written without it: whether ``noise`` is set
        is a static choice (``Game.noisy``), so a config read back from its own dump (a
        replay's meta.json, a fork) builds the same Game and reuses its compiled programs."""
        out: dict[str, Any] = handler(self)
        if "noise" not in self.model_fields_set:
            out.pop("noise", None)
        return out

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """The fields' schema in both modes (the serializer above only leaves a key out; its
        return type would make a response's schema a bare object)."""
        if handler.mode == "serialization":
            return cls.model_json_schema(mode="validation")
        return handler(schema)


class PlayerConfig(ConfigModel):
    """One player: strategy (a built-in name or a bdpd_jax.Policy), its parameters, wealth."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, arbitrary_types_allowed=True)
    strategy: Label | Policy = "conservative"
    name: Name | None = None
    intensity: float = Field(0.5, gt=0, le=1)
    reduction_factor: float = Field(1.0, ge=0)
    private_resource: float = Field(30.0, ge=0)
    # the first (1-based) turn the player acts; before it, it neither harvests nor counts
    active_from: int = Field(1, ge=1, le=MAX_TURNS)
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


class ArenaConfig(ConfigModel):
    """The whole arena: the seed payload (model, observability, agentTimeout) plus players."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, arbitrary_types_allowed=True)
    model: ModelConfig = Field(default_factory=ModelConfig)
    observability: dict[Label, ObsVar] = Field(default_factory=dict)
    agent_timeout: int = Field(30000, ge=1)
    players: list[PlayerConfig] | None = None
    pacts: list[PactConfig] = Field(default_factory=list, max_length=MAX_PACT_SLOTS)  # pre-declared pacts
    # specs {id, type, trigger, payload} (specs.py)
    perturbations: list[Any] = Field(default_factory=list, max_length=MAX_SPECS)
    plugins: list[Any] = Field(
        default_factory=list, max_length=MAX_SPECS
    )  # governance plugins {type, id, ...} (plugins.py)
    discussion: DiscussionConfig | None = None  # live arenas' talk between harvests (discussion.py)

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
        engine = ENGINES[self.model.engine_mode]
        produced = set(engine.variables) | set(OWN_VARS) | set(PEER_VARS) | {"nPlayers"}
        for name, spec in self.observability.items():
            if name not in OBS_VARS:
                raise ValueError(f"observability.{name}: unknown observation variable; known: {list(OBS_VARS)}")
            if name not in produced and spec.visible:
                raise ValueError(
                    f"observability.{name}: not produced by engineMode={self.model.engine_mode!r} "
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
            self.model.engine.check_players(self.players)
            if needed_slots(self) > MAX_PACT_SLOTS:
                raise ValueError(
                    f"pacts: {needed_slots(self)} pacts and scripted pledges/proposals need more than "
                    f"{MAX_PACT_SLOTS} pact slots (bdpd_jax/config/limits.py)"
                )
            n = len(self.players)
            if not self.model.min_players <= n <= self.model.max_players:
                raise ValueError(
                    f"players: {n} players is outside [minPlayers={self.model.min_players}, "
                    f"maxPlayers={self.model.max_players}]"
                )
        check_perturbations(self)  # Table A.1 specs against the engine and players (specs.py)
        if self.players is not None and self.plugins:
            check_plugins(self)
        return self

    @classmethod
    def load(cls, source: ArenaConfig | dict[str, Any] | str | Path) -> ArenaConfig:
        """Accept a config, a dict, a JSON string or a path to a JSON file (read only when at
        most ``MAX_CONFIG_BYTES``, bdpd_jax/config/files.py)."""
        if isinstance(source, ArenaConfig):
            return source
        if isinstance(source, dict):
            return cls.model_validate(source)
        if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith("{")):
            path = Path(source)
            if not path.is_file():
                raise ValueError(f"config: no such file {str(path)!r}")
            text = read_text(path, MAX_CONFIG_BYTES, "config")  # bounded: never read whole past the limit
            try:
                return cls.model_validate_json(text)
            except ValidationError as e:
                if e.errors()[0]["type"] == "json_invalid":  # (field errors name their field)
                    raise ValueError(f"config: {str(path)!r} is not valid JSON ({e.errors()[0]['msg']})") from None
                raise
        return cls.model_validate_json(source)

    def require_players(self) -> list[PlayerConfig]:
        if not self.players:
            raise ValueError("players: a run needs a players list, e.g. [{'strategy': 'aggressive'}, ...]")
        return self.players


def default_config() -> ArenaConfig:
    """The shipped default: the seed's logistic payload with 2 conservative + 2 aggressive."""
    path = Path(__file__).resolve().parent.parent / "data" / "default.json"
    return ArenaConfig.model_validate(json.loads(path.read_text()))
