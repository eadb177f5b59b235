"""Issue 36's done-when: an engine with a metric column of its own, a perturbation type and a
player kind, each defined in this file alone with one registration call, pass the public
contract checks (``bdpd_jax.testing``) and run: no other file of the package is edited to add
them; so does a governance agent kind (host/governor_kinds.py) of the new player kind. The
registries are left as they were found (the module fixture unregisters all of them).
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pydantic import BaseModel, ConfigDict, Field

import bdpd_jax as bj
from bdpd_jax.config.engines import ENGINE_CONFIGS, EngineConfig, register_engine, unregister_engine
from bdpd_jax.config.perturbations import ArenaSpec, register_perturbation, unregister_perturbation
from bdpd_jax.host.agents.base import AgentResult
from bdpd_jax.host.governor_kinds import GOVERNOR_KINDS, GovernorKind, register_governor_kind, unregister_governor_kind
from bdpd_jax.host.live.governance_agent import Governor, GovernorSpec, checked
from bdpd_jax.host.live.operator import Operator
from bdpd_jax.host.live.players import LivePlayerConfig
from bdpd_jax.host.player_kinds import PLAYER_KINDS, PlayerKind, register_player_kind, unregister_player_kind
from bdpd_jax.kernels import perturb as pk
from bdpd_jax.kernels.engines import ENGINES, Engine
from bdpd_jax.kernels.params import farr
from bdpd_jax.kernels.registry import Registry
from bdpd_jax.testing import check_engine, check_governor_kind, check_perturbation_type, check_player_kind


# -- an engine: a pond refilled by a constant inflow, with its depth as a metric column ------------
class PondParams(eqx.Module):
    initial: jax.Array  # float[]
    inflow: jax.Array  # float[], stock added each turn


class PondState(eqx.Module):
    stock: jax.Array  # float[]


class Pond(Engine):
    name = "pond"
    variables = ("commonsStock",)
    recorded = ("pond_depth",)  # the metric: a column of Results.turns
    features = frozenset({"stock"})

    def params_from_model(self, model):
        return PondParams(initial=farr(model.commons_initial), inflow=farr(model.inflow))

    def init(self, p):
        return PondState(stock=p.initial)

    def stock(self, s):
        return s.stock

    def step_one(self, s, demand, u, p):
        got = jnp.clip(demand, 0.0, s.stock)
        return PondState(stock=s.stock - got), got, jnp.zeros((), bool), jnp.zeros_like(got)

    def step(self, s, p):
        return PondState(stock=s.stock + p.inflow), p.inflow

    def check_end(self, s, p):
        return s.stock <= 0.0

    def reference(self, s, p):
        return p.initial

    def extra_observations(self, s, p):
        return {"commonsStock": s.stock}

    def recorded_values(self, s):
        return {"pond_depth": s.stock / 10.0}

    def summary_values(self, s):
        return {"pond_final_depth": s.stock / 10.0}


class PondConfig(EngineConfig):
    commons_initial: float = Field(40.0, gt=0)
    inflow: float = Field(2.0, ge=0)


# -- a perturbation type: a wealth tax at a rate ----------------------------------------------------
def _wealth_tax(game, view, slot, who):
    rate = jnp.clip(slot.value.astype(view.wealth.dtype), 0.0, 1.0)
    wealth = jnp.where(who, view.wealth * (1.0 - rate), view.wealth)
    return {"wealth": wealth}, jnp.sum(jnp.where(who, wealth, 0.0)), slot.player


class _Rate(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    rate: float = Field(ge=0, le=1)


class WealthTaxSpec(ArenaSpec):
    type: Literal["wealth_tax"]
    example: ClassVar[dict[str, Any]] = {"rate": 0.5}
    payload: _Rate

    def payload_numbers(self, config, where, policies):
        return {"value": self.payload.rate, "player": pk.ALL}


# -- a player kind: always asks for the same harvest, at once ---------------------------------------
class FixedAgent:
    async def decide(self, obs: dict[str, Any], wealth: float, inbox: Any = None) -> AgentResult:
        return AgentResult(1.5)


class Fixed(PlayerKind):
    name, label = "fixed", "fixed harvest"

    def make_agent(self, spec: Any, ctx: Any) -> FixedAgent:
        return FixedAgent()


# -- a governance agent kind of the same name: always asks for the same cap, at once ------------------
class FixedGovernor:
    async def answer(self, obs: dict[str, Any]) -> dict[str, Any]:
        return {"cap": 2.0}


class FixedGovernorKind(GovernorKind):
    name = "fixed"

    def make_agent(self, spec: Any, ctx: Any) -> FixedGovernor:
        return FixedGovernor()


@pytest.fixture(scope="module", autouse=True)
def registered():
    before = (tuple(ENGINES), tuple(ENGINE_CONFIGS), pk.type_names(), tuple(PLAYER_KINDS), tuple(GOVERNOR_KINDS))
    register_engine(Pond(), PondConfig)  # the one registration line of each extension
    register_perturbation(
        "wealth_tax", _wealth_tax, WealthTaxSpec, target="player", label="wealth", description="w <- w x (1 - rate)"
    )
    register_player_kind(Fixed())
    register_governor_kind(FixedGovernorKind())
    yield
    unregister_governor_kind("fixed")
    unregister_player_kind("fixed")
    unregister_perturbation("wealth_tax")
    unregister_engine("pond")
    assert (
        tuple(ENGINES),
        tuple(ENGINE_CONFIGS),
        pk.type_names(),
        tuple(PLAYER_KINDS),
        tuple(GOVERNOR_KINDS),
    ) == before


def test_the_new_extensions_pass_the_public_contract_checks():
    check_engine("pond")
    check_perturbation_type("wealth_tax")
    check_player_kind("fixed")
    check_governor_kind("fixed")
    assert LivePlayerConfig.model_validate({"agentType": "fixed"}).waits is False


def test_a_checker_fails_an_extension_that_breaks_its_contract():
    class Leaky(Pond):  # delivers more than the pond holds: the stock goes negative
        name = "leaky"

        def step_one(self, s, demand, u, p):
            return PondState(stock=s.stock - demand), demand, jnp.zeros((), bool), jnp.zeros_like(demand)

    register_engine(Leaky(), PondConfig)
    try:
        with pytest.raises(AssertionError, match="leaky: a withdrawal left a negative stock"):
            check_engine("leaky")
    finally:
        unregister_engine("leaky")
    with pytest.raises(ValueError, match="agentType: unknown player kind 'websocket'"):
        LivePlayerConfig.model_validate({"agentType": "websocket"})
    with pytest.raises(ValueError, match="kind: unknown governance agent kind 'websocket'"):
        GovernorSpec.model_validate({"kind": "websocket"})


def test_a_governor_kind_is_read_not_named():
    """The new kind validates, passes the operator's check through its player kind, is built
    by its own factory and answers; whether it waits is its player kind's (``Fixed``: no)."""
    spec, timeout = checked({"kind": "fixed"}, Operator(), 1000.0)
    assert spec.player_kind is PLAYER_KINDS["fixed"]
    gov = Governor(spec, 0, timeout)
    gov.start(None, Operator())
    assert isinstance(gov.agent, FixedGovernor) and gov.waits is False
    assert asyncio.run(gov.ask({}, np.float32)).action == {"cap": 2.0}
    with pytest.raises(ValueError, match="credential: only LLM players use credentials"):
        checked({"kind": "fixed", "credential": "c"}, Operator(), 1000.0)  # its player kind's rule
    with pytest.raises(ValueError, match="agentType: unknown player kind 'nobody'"):
        register_governor_kind(type("Nobody", (FixedGovernorKind,), {"name": "nobody"})())
    assert "nobody" not in GOVERNOR_KINDS


def test_the_new_engine_metric_and_perturbation_run_in_a_batch():
    cfg = {
        "model": {"engineMode": "pond", "maxTurns": 4, "commonsInitial": 30.0},
        "observability": {"commonsStock": {"visible": True}},
        "players": [{"strategy": "idle"}, {"strategy": "aggressive", "intensity": 0.1}],
        "perturbations": [
            {"id": "tax", "type": "wealth_tax", "trigger": {"kind": "turn", "turn": 2}, "payload": {"rate": 0.5}}
        ],
    }
    res = bj.simulate(cfg, n_arenas=2, seed=1)
    t = res.turns
    assert np.allclose(t.pond_depth, t.stock / 10.0)  # the metric column, recorded every turn
    assert "pond_final_depth" in res.summary.columns
    rows = res.perturbations
    assert list(rows.arena) == [0, 1] and set(rows.type) == {"wealth_tax"} and set(rows.turn) == {2}
    with pytest.raises(ValueError, match="capitalStock"):
        bj.ArenaConfig.load({**cfg, "observability": {"capitalStock": {"visible": True}}})


def test_the_one_registry_pattern():
    """kernels/registry.py, behind every kind: append-only codes, errors naming the field and
    the known names, only the last entry removable, a read-only mapping read when called."""
    reg: Registry[int] = Registry("widgetType", "widget")
    reg.register("a", 10)
    reg.register("b", 20)
    assert (reg.names(), reg.code("b"), reg.by_code(0), reg.lookup("b"), dict(reg)) == (
        ("a", "b"),
        1,
        10,
        20,
        {"a": 10, "b": 20},
    )
    with pytest.raises(ValueError, match=r"widgetType: widget 'a' is already registered"):
        reg.register("a", 11)
    with pytest.raises(ValueError, match=r"widgetType: unknown widget 'c'; known: \['a', 'b'\]"):
        reg.get_entry("c")
    with pytest.raises(ValueError, match="widgetType: unknown widget code 2"):
        reg.by_code(2)
    with pytest.raises(ValueError, match=r"only the last registered widget \('b'\)"):
        reg.unregister("a")
    reg.unregister("b")
    assert reg.names() == ("a",) and "b" not in reg and len(reg) == 1


def test_a_logged_kind_this_process_does_not_know_is_shown_not_refused():
    """A saved folder may name a player kind registered only in the process that wrote it:
    the dashboard shows it by its logged name (bounded) as an external player."""
    from bdpd_jax.host.player_kinds import MAX_KIND_LABEL, logged_kind, shown_kind

    assert shown_kind("builtin") == ("built-in", False)
    assert logged_kind("websocket_elsewhere") is None and logged_kind(["unhashable"]) is None
    assert shown_kind("websocket_elsewhere") == ("websocket_elsewhere", True)
    label, external = shown_kind("x" * 10_000)
    assert len(label) == MAX_KIND_LABEL and external


def test_the_kernel_side_checks_import_without_the_host_extra() -> None:
    """bdpd_jax.testing imports the live host only inside the player, governor and term-tool
    checks, so a core install (no ``host`` extra: orjson, jsbox, aiohttp...) can run
    check_engine, check_perturbation_type and check_plugin."""
    import ast
    import inspect

    import bdpd_jax.testing as T

    top = [n for n in ast.parse(inspect.getsource(T)).body if isinstance(n, ast.ImportFrom)]
    assert top and not [n.module for n in top if (n.module or "").startswith("host")], "host imported at the top"
