"""Governance plugins in the config: the top-level ``plugins`` list beside ``pacts`` and
``perturbations``, ``[{"type": ..., "id": ..., ...params}]`` (kernels/plugins.py runs them).

A plugin type is one kernel ``act`` (and ``init``), one pydantic spec with ``params(config)``
(every number a params leaf, so sweeps compile once) and one :func:`register_plugin` call.
Built in: ``voluntary_sanction`` (kernels/voluntary_sanction.py) and ``governance_agent``
(kernels/governance_agent.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

import jax.numpy as jnp
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..kernels import governance_agent as G
from ..kernels import plugins as K
from ..kernels import voluntary_sanction as V
from ..kernels.engines import ENGINES
from ..kernels.params import farr
from ..kernels.perturb_registry import supported
from ..kernels.registry import Registry
from .limits import MAX_LADDER_SCALE, MAX_TURNS, Id

# an ArenaConfig: config/game.py imports this module, so naming the class here would be an import
# cycle (tests/test_architecture.py forbids them, type-checking imports included)
Config = Any

#: the config side of the plugin type registry (kernels/registry.py; kernel side: kernels.plugins.PLUGINS)
PLUGIN_SPECS: Registry[type[PluginSpec]] = Registry("type", "plugin type")


def register_plugin(
    name: str,
    act: Callable[..., tuple[K.Effects, Any]],
    spec: type[PluginSpec],
    *,
    init: Callable[[Any, Any], Any] | None = None,
    reasons: tuple[str, ...] = (),
    begin: Callable[..., tuple[Any, Any, Any]] | None = None,
    reserves_pact: bool = False,
) -> type[PluginSpec]:
    """Add a plugin type end to end: its kernel (``act``, ``init``, reason names, optional
    start-of-turn ``begin`` hook, whether it holds a reserved pact slot) and its config model
    ``spec`` (``type: Literal[name]``, ``id``, params, and ``params(config)``)."""
    if name in PLUGIN_SPECS:
        raise ValueError(f"type: plugin type {name!r} is already registered")
    K.register_plugin(
        name,
        act,
        init if init is not None else (lambda game, pp: ()),
        reasons,
        begin=begin,
        reserves_pact=reserves_pact,
    )
    return PLUGIN_SPECS.register(name, spec)


class PluginSpec(BaseModel):
    """Common part of a plugin spec; ``check`` runs when the players are known."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    example: ClassVar[dict[str, Any]] = {}  # its params in a valid spec (docs; bdpd_jax.testing runs it)
    id: Id
    type: Id

    def check(self, config: Config, where: str) -> None:
        pass

    def check_count(self, lo: int, hi: int, where: str) -> None:
        """A live arena at create: its players are not all known yet, only that they will be
        ``lo`` to ``hi``; refuse what no such count can satisfy (ValueError naming the field)."""

    def params(self, config: Config) -> Any:
        raise NotImplementedError

    def perturbation_types(self, config: Config) -> tuple[str, ...]:
        """Perturbation types the plugin fires (the build compiles them into the game)."""
        return ()


class IfRicherThan(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    if_richer_than: float = Field(ge=0)


Rule = Literal["never", "always", "reciprocal"] | IfRicherThan


class VoluntarySanctionSpec(PluginSpec):
    """``voluntary_sanction``: ``cost`` paid per player fined, ``fine`` imposed; ``sanctioner``:
    one rule for all, or one per player (``never`` | ``always`` | ``reciprocal`` |
    ``{"if_richer_than": w}``)."""

    type: Literal["voluntary_sanction"]
    example: ClassVar[dict[str, Any]] = {"cost": 0.1, "fine": 1.0, "sanctioner": "reciprocal"}
    cost: float = Field(ge=0)
    fine: float = Field(ge=0)
    sanctioner: Rule | list[Rule] = "always"

    def rules(self, n: int) -> list[Rule]:
        return list(self.sanctioner) if isinstance(self.sanctioner, list) else [self.sanctioner] * n

    def check(self, config: Config, where: str) -> None:
        n = len(config.players or ())
        if isinstance(self.sanctioner, list) and len(self.sanctioner) != n:
            raise ValueError(f"{where}.sanctioner: one rule per player ({n}), got {len(self.sanctioner)}")

    def check_count(self, lo: int, hi: int, where: str) -> None:
        if isinstance(self.sanctioner, list) and not lo <= len(self.sanctioner) <= hi:
            raise ValueError(
                f"{where}.sanctioner: one rule per player, and this arena will start with {lo} to "
                f"{hi} players, got {len(self.sanctioner)} rules"
            )

    def params(self, config: Config) -> V.VoluntaryParams:
        rules = self.rules(len(config.players))
        code = [V.IF_RICHER if isinstance(r, IfRicherThan) else V.RULES.index(r) for r in rules]
        thr = [r.if_richer_than if isinstance(r, IfRicherThan) else 0.0 for r in rules]
        return V.VoluntaryParams(
            cost=farr(self.cost), fine=farr(self.fine), rule=jnp.asarray(code, jnp.int32), threshold=farr(thr)
        )


register_plugin("voluntary_sanction", V.act, VoluntarySanctionSpec, init=V.init, reasons=V.REASONS)


class GovernanceAgentSpec(PluginSpec):
    """``governance_agent``: the built-in rule-based regulator (kernels/governance_agent.py).
    When cooperation_index < ``coop_below`` or the engine's commonsRatio < ``stock_below``, it
    imposes a harvest_cap pact of ``cap`` on all (None: never), scales the sanction ladders by
    ``tighten`` and mandates ``regen_set`` to ``regen`` (None: never); when cooperation_index >=
    ``coop_above`` and commonsRatio >= ``stock_above`` it lifts its cap and scales the ladders
    by ``loosen`` (never below the configured ladder); at least ``cooldown`` turns between two
    actions. ``external: true`` (static): the live host decides instead (``set_pending``)."""

    type: Literal["governance_agent"]
    coop_below: float = Field(0.5, ge=0, le=1)
    stock_below: float = Field(0.3, ge=0)
    coop_above: float = Field(0.9, ge=0, le=1)
    stock_above: float = Field(0.5, ge=0)
    cap: float | None = Field(None, gt=0)
    tighten: float = Field(1.0, ge=0, le=MAX_LADDER_SCALE)
    loosen: float = Field(1.0, ge=0, le=1)
    regen: float | None = Field(None, ge=0)
    cooldown: int = Field(1, ge=0, le=MAX_TURNS)
    external: bool = False

    def check(self, config: Config, where: str) -> None:
        if self.regen is not None and not self._regen_ok(config):
            raise ValueError(
                f"{where}.regen: engineMode={config.model.engine_mode!r} has no regeneration rate "
                f"to set (got {self.regen!r})"
            )

    @staticmethod
    def _regen_ok(config: Config) -> bool:
        return supported(ENGINES[config.model.engine_mode], "regen_set")

    def perturbation_types(self, config: Config) -> tuple[str, ...]:
        return ("regen_set",) if self._regen_ok(config) else ()

    def params(self, config: Config) -> G.AgentParams:
        nan = float("nan")
        return G.AgentParams(
            coop_below=farr(self.coop_below),
            stock_below=farr(self.stock_below),
            coop_above=farr(self.coop_above),
            stock_above=farr(self.stock_above),
            cap=farr(nan if self.cap is None else self.cap),
            tighten=farr(self.tighten),
            loosen=farr(self.loosen),
            regen=farr(nan if self.regen is None else self.regen),
            cooldown=jnp.asarray(self.cooldown, jnp.int32),
            external=self.external,
        )


register_plugin("governance_agent", G.act, GovernanceAgentSpec, init=G.init, begin=G.begin, reserves_pact=True)


def parse_plugins(raw: list[Any]) -> list[PluginSpec]:
    """Validate the ``plugins`` list (ValueError naming ``plugins[i].<field>``); ids unique."""
    out: list[PluginSpec] = []
    seen: set[str] = set()
    for i, r in enumerate(raw):
        where = f"plugins[{i}]"
        spec: PluginSpec
        if isinstance(r, PluginSpec) and type(r) in PLUGIN_SPECS.values():
            spec = r
        elif not isinstance(r, dict):
            raise ValueError(f"{where}: a plugin is an object {{type, id, ...}}, got {r!r:.80}")
        elif not isinstance(r.get("type"), str) or r["type"] not in PLUGIN_SPECS:
            raise ValueError(f"{where}.type: unknown plugin type {r.get('type')!r:.80}; known: {sorted(PLUGIN_SPECS)}")
        else:
            try:
                spec = PLUGIN_SPECS[r["type"]].model_validate(r)
            except ValidationError as e:
                first = e.errors()[0]
                loc = ".".join(str(x) for x in first["loc"])
                raise ValueError(f"{where}.{loc}: {first['msg']} (got {first.get('input')!r:.80})") from None
        if spec.id in seen:
            raise ValueError(f"{where}.id: duplicate id {spec.id!r}")
        seen.add(spec.id)
        out.append(spec)
    return out


def check_plugins(config: Config) -> None:
    for i, s in enumerate(config.plugins):
        s.check(config, f"plugins[{i}]")


def reserved_slots(config: Config) -> int:
    """Pact slots the config's plugins reserve (one per regulator), after the players' slots."""
    return sum(K.plugin_type(s.type).reserves_pact for s in getattr(config, "plugins", []) or [])


def perturbation_types(config: Config) -> tuple[str, ...]:
    """Perturbation types the config's plugins fire (kernels compile them into the game)."""
    return tuple(dict.fromkeys(t for s in getattr(config, "plugins", []) or [] for t in s.perturbation_types(config)))


def reason_name(type_: str, code: int) -> str | None:
    reasons = K.plugin_type(type_).reasons
    return reasons[code - 1] if 0 < code <= len(reasons) else None


__all__ = [
    "register_plugin",
    "PluginSpec",
    "VoluntarySanctionSpec",
    "GovernanceAgentSpec",
    "parse_plugins",
    "check_plugins",
    "reserved_slots",
    "perturbation_types",
]
