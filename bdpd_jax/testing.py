"""Contract checks for extensions: run them on your own engine, term type, perturbation type,
plugin, player kind or governance agent kind once it is registered (the shipped ones pass them
in the test suite).

Each ``check_*`` takes the registered name and raises ``AssertionError`` saying what broke
(never a bare ``assert``: the checks hold under ``python -O``). They are cheap: tiny shapes,
a few small programs; ``run=True`` adds a two-arena ``simulate`` that fires the extension.

    from bdpd_jax.config.engines import register_engine
    from bdpd_jax.testing import check_engine
    register_engine(MyEngine(), MyEngineConfig)
    check_engine("my_engine")
"""

from __future__ import annotations

import asyncio
import math
from functools import partial
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from .config.engines import EngineConfig, engine_config_model
from .config.game import ArenaConfig, ModelConfig
from .config.perturbations import ARENA_SPECS, SPEC_TYPES, ArenaSpec
from .config.plugins import PLUGIN_SPECS, PluginSpec
from .config.terms import detail, numbers, parse_terms, slot_terms, terms_schema
from .kernels import pacts as P
from .kernels import perturb as pk
from .kernels import plugins as K
from .kernels.engines import ENGINES, Engine, get_engine
from .kernels.params import ENV_VARS
from .prepare import prepare
from .run.simulate import simulate

if TYPE_CHECKING:  # the host's checks import it when called: the kernel-side checks need no host extra
    from .host.live.operator import Operator

PLAYERS = [  # three players who harvest differently: enough to breach, fire and sanction
    {"strategy": "aggressive", "intensity": 0.9, "privateResource": 10, "name": "a"},
    {"strategy": "aggressive", "intensity": 0.3, "privateResource": 20, "name": "b"},
    {"strategy": "conservative", "privateResource": 30, "name": "c"},
]


def _expect(ok: Any, what: str) -> None:
    if not ok:
        raise AssertionError(what)


#: the config's default engineMode: the engine a check runs on when any engine will do
DEFAULT_ENGINE: str = ModelConfig.model_fields["engine_mode"].default


def _config(engine: str = DEFAULT_ENGINE, turns: int = 4, **extra: Any) -> dict[str, Any]:
    return {"model": {"engineMode": engine, "maxTurns": turns}, "players": [dict(p) for p in PLAYERS], **extra}


def _round_trip(raw: dict[str, Any], who: str) -> ArenaConfig:
    cfg = ArenaConfig.model_validate(raw)
    again = ArenaConfig.model_validate(cfg.model_dump(mode="json"))
    _expect(again.model_dump(mode="json") == cfg.model_dump(mode="json"), f"{who}: the config does not round-trip")
    return cfg


def _nudged(tree: Any) -> Any:
    """``tree`` with every float leaf changed (same shapes and dtypes): new values, one program."""
    return jax.tree.map(lambda x: x * 0.9 + 0.01 if jnp.issubdtype(jnp.result_type(x), jnp.inexact) else x, tree)


# -- engines ----------------------------------------------------------------------------------------
def check_engine(name: str) -> None:
    """An engine (kernels.engines + its config model): a config round trip, scalar shapes, a stock
    never negative nor over-delivered, observations within its variables, its recorded and
    summary columns, one compiled step for every params value, and vmap equal to a loop."""
    eng, model = get_engine(name), engine_config_model(name)
    _expect(isinstance(eng, Engine) and eng.name == name, f"{name}: not an Engine registered under its name")
    _expect(isinstance(model, type) and issubclass(model, EngineConfig), f"{name}: its config model is no EngineConfig")
    _expect(set(eng.variables) <= set(ENV_VARS), f"{name}: variables {set(eng.variables) - set(ENV_VARS)} unknown")
    cfg = _round_trip({"model": {"engineMode": name, "maxTurns": 5}, "players": [{"strategy": "idle"}] * 2}, name)
    prep = prepare(cfg)
    p = prep.params.engine
    s = eng.init(p)
    stock = eng.stock(s)
    _expect(jnp.shape(stock) == () and float(stock) >= 0, f"{name}: the initial stock is not a scalar >= 0")
    none = eng.step_one(s, jnp.zeros((), stock.dtype), jnp.asarray(0.5, stock.dtype), p)
    _expect(float(none[1]) == 0.0 and not bool(none[2]), f"{name}: a zero demand delivers or collapses")
    demand = jnp.asarray(2.0 * float(stock) + 1.0, stock.dtype)  # more than exists
    s1, got, died, drawn = eng.step_one(s, demand, jnp.asarray(0.5, stock.dtype), p)
    _expect(all(jnp.shape(x) == () for x in (got, died, drawn)), f"{name}: step_one returns non-scalars")
    _expect(0.0 <= float(got) <= float(demand), f"{name}: delivered {float(got)} outside [0, demand]")
    _expect(float(eng.stock(s1)) >= 0.0, f"{name}: a withdrawal left a negative stock")
    s2, regen = eng.step(s1, p)
    same = str(jax.tree_util.tree_structure(s2)) == str(jax.tree_util.tree_structure(s))
    _expect(same, f"{name}: step changes the state's structure")
    _expect(jnp.shape(regen) == () and float(eng.stock(s2)) >= 0.0, f"{name}: step gives a bad regen or stock")
    _expect(jnp.shape(eng.check_end(s2, p)) == () and jnp.shape(eng.failed(s2)) == (), f"{name}: non-scalar flags")
    _expect(set(eng.extra_observations(s2, p)) <= set(eng.variables), f"{name}: observes beyond its variables")
    _expect(set(eng.recorded_values(s2)) == set(eng.recorded), f"{name}: recorded_values != recorded")
    _expect(all(jnp.shape(v) == () for v in eng.summary_values(s2).values()), f"{name}: non-scalar summary values")
    traces: list[int] = []

    def step(state: Any, params: Any) -> Any:
        traces.append(1)
        return eng.step(state, params)

    jitted = jax.jit(step)
    jitted(s, p)
    jitted(s, _nudged(p))
    _expect(len(traces) == 1, f"{name}: a new params value recompiles step (a number held outside the params)")
    both = jax.tree.map(lambda *x: jnp.stack(x), s, s1), jax.tree.map(lambda *x: jnp.stack(x), p, _nudged(p))
    batched = jax.vmap(eng.step)(*both)[0]
    for i, (si, pi) in enumerate(((s, p), (s1, _nudged(p)))):
        one = eng.step(si, pi)[0]
        close = jax.tree.map(lambda a, b, i=i: bool(jnp.allclose(a[i], b, equal_nan=True)), batched, one)
        _expect(all(jax.tree.leaves(close)), f"{name}: vmap of step differs from one arena at a time")


# -- pact term types --------------------------------------------------------------------------------
# the term registry is read when a program is traced: ``names`` (static) keys the programs on it
@partial(jax.jit, static_argnums=0)
def _propose(names: tuple[str, ...], table: Any, term: Any, max_harvest: Any, tolerance: Any) -> Any:
    """Party 0 proposes to parties 0 and 1 at turn 1: one program for every type's numbers."""
    return P.propose(table, 0, jnp.asarray([True, True, False]), term, max_harvest, tolerance, jnp.int32(1))


@partial(jax.jit, static_argnums=0)
def _valid(names: tuple[str, ...], term: Any, max_harvest: Any, tolerance: Any) -> Any:
    return P.valid_terms(term, max_harvest, tolerance)


def _kernel_valid(code: int, max_harvest: float, tolerance: float) -> bool:
    """The kernel's term schema on one slot's numbers (under the registry as it stands)."""
    return bool(_valid(P.term_names(), jnp.int32(code), jnp.float32(max_harvest), jnp.float32(tolerance)))


def _tight_terms(name: str) -> dict[str, Any]:
    return {"type": name, **{f.name: f.minimum + 0.01 for f in P.term_type(name).fields}}


def check_term_type(name: str) -> None:
    """A term type (kernels.pacts.register_term): a checker giving one limit per slot, fields whose
    bounds the kernel, the config, the tools and the JSON schema apply alike, a detail string,
    and a round trip through the config and the slot's stored numbers."""
    from .host.agents.tools import validate_action  # the players' tools apply the term's bounds too

    tt, code = P.term_type(name), P.term_code(name)
    _expect(P.term_type(code) is tt and callable(tt.limit), f"{name}: not registered with a checker")
    _expect(tt.detail and tt.description, f"{name}: a term type needs a detail format and a description")
    _expect({f.number for f in tt.fields} <= set(P.NUMBERS), f"{name}: a field stored outside {P.NUMBERS}")
    _expect(len({f.name for f in tt.fields}) == len(tt.fields), f"{name}: two fields share one JSON name")
    schema = terms_schema()
    _expect(name in schema["properties"]["type"]["enum"], f"{name}: missing from the terms schema")
    for f in tt.fields:
        bound = schema["properties"].get(f.name, {})
        _expect(bound.get("exclusiveMinimum" if f.exclusive else "minimum") == f.minimum, f"{name}.{f.name}: schema")
    good = _tight_terms(name)
    terms = parse_terms(good)
    mh, tol = numbers(terms)
    _expect(_kernel_valid(code, mh, tol), f"{name}: the kernel refuses {good}")
    table = _propose(P.term_names(), P.empty(3, 3), jnp.int32(code), jnp.float32(mh), jnp.float32(tol))[0]
    limit = np.broadcast_to(np.asarray(tt.limit(table, P.TurnContext(group_mean=jnp.float32(1.0)))), (3,))
    _expect(np.isfinite(limit[0]), f"{name}: the checker gives no finite limit")
    _expect(
        slot_terms(code, {"max_harvest": mh, "tolerance": tol}) == terms, f"{name}: stored numbers do not round-trip"
    )
    _expect(validate_action({"tool": "propose_pact", "parties": ["a"], "terms": good})["terms"] == terms, "tools")
    text = detail(name, 2.0, 1.0, 0.5)
    _expect(isinstance(text, str) and text and "{" not in text, f"{name}: the detail string does not format")
    _round_trip(_config(pacts=[{"parties": ["a", "b"], "terms": terms}]), name)
    for f in tt.fields:
        bad = f.minimum if f.exclusive else f.minimum - 1.0
        for where in ("terms", "tool", "config"):  # the parser, the propose_pact tool, a config's pact
            terms_bad = {**good, f.name: bad}
            try:
                if where == "tool":
                    validate_action({"tool": "propose_pact", "parties": ["a"], "terms": terms_bad})
                elif where == "config":
                    ArenaConfig.model_validate(_config(pacts=[{"parties": ["a", "b"], "terms": terms_bad}]))
                else:
                    parse_terms(terms_bad)
            except ValueError as e:
                _expect(f"terms.{f.name}" in str(e), f"{name}.{f.name}: the error does not name the field: {e}")
            else:
                raise AssertionError(f"{name}.{f.name}: {bad} is accepted outside its bound")
        bad_mh, bad_tol = numbers({**terms, f.name: bad})
        _expect(not _kernel_valid(code, bad_mh, bad_tol), f"{name}.{f.name}: the kernel accepts {bad}")


# -- perturbation types -----------------------------------------------------------------------------
def _engine_for(name: str) -> str:
    found = [e for e, eng in ENGINES.items() if pk.supported(eng, name)]
    _expect(found, f"{name}: no registered engine has the feature it requires")
    return DEFAULT_ENGINE if DEFAULT_ENGINE in found else found[0]


def check_perturbation_type(name: str, *, run: bool = False) -> None:
    """A perturbation type (bdpd_jax.config.perturbations.register_perturbation): an effect, a
    field map (engine field, target, label), a config model with an example payload that
    round-trips and compiles to a slot of its code, a bad payload refused by field; ``run``:
    it fires once in each of two arenas with a finite logged value."""
    pt = pk.perturbation_type(name)
    _expect(callable(pt.apply) and pt.label and pt.description, f"{name}: needs apply, a label and a description")
    _expect(pt.target in ("none", "player", "variable"), f"{name}: unknown target kind {pt.target!r}")
    spec = ARENA_SPECS.get_entry(name)
    _expect(issubclass(spec, ArenaSpec) and SPEC_TYPES.get_entry(name) is spec, f"{name}: its spec is no ArenaSpec")
    _expect(isinstance(getattr(spec, "example", None), dict), f"{name}: its ArenaSpec needs an example payload")
    layer = pk.PerturbLayer(types=(name,), n_slots=1)
    _expect(layer.fields == (() if pt.engine_field is None else (pt.engine_field,)), f"{name}: field map")
    engine = _engine_for(name)
    raw = {"id": f"p-{name}", "type": name, "trigger": {"kind": "turn", "turn": 2}, "payload": dict(spec.example)}
    cfg = _round_trip(_config(engine, perturbations=[raw]), name)
    (parsed,) = cfg.perturbations
    _expect(type(parsed) is spec and parsed.numbers(cfg, "p")["code"] == pk.type_code(name), f"{name}: slot code")
    try:
        ArenaConfig.model_validate(_config(engine, perturbations=[{**raw, "payload": {"nope": 1}}]))
    except ValueError as e:
        _expect("perturbations[0]" in str(e), f"{name}: the error does not name the spec: {e}")
    else:
        raise AssertionError(f"{name}: a payload with an unknown field is accepted")
    for other, eng in ENGINES.items():  # the field map: every engine it applies to has the field
        if pt.engine_field is not None and pk.supported(eng, name):
            prep = prepare(ArenaConfig.model_validate({"model": {"engineMode": other}, "players": PLAYERS}))
            value = eng.get_param(prep.params.engine, pt.engine_field)
            _expect(math.isfinite(float(value)), f"{name}: engine {other!r} has no field {pt.engine_field!r}")
    if run:
        rows = simulate(cfg, n_arenas=2, seed=3, progress=False).perturbations
        rows = rows[rows.id == f"p-{name}"]
        _expect(list(rows.arena) == [0, 1] and set(rows.turn) == {2}, f"{name}: does not fire once per arena")
        _expect(np.isfinite(rows.value.to_numpy(float)).all(), f"{name}: a non-finite logged value")


# -- plugins ----------------------------------------------------------------------------------------
def check_plugin(name: str, *, run: bool = False) -> None:
    """A plugin type (bdpd_jax.config.plugins.register_plugin): its kernel part (act, init, reason
    names) and config model (a PluginSpec with an ``example``) registered together; the
    example round-trips through the config and prepares; every number of its params is an
    array leaf (sweeps compile once); ``run``: two arenas run with it."""
    kt = K.plugin_type(name)
    _expect(callable(kt.act) and callable(kt.init), f"{name}: needs act and init")
    _expect(all(isinstance(r, str) and r for r in kt.reasons), f"{name}: reason names must be non-empty strings")
    spec = PLUGIN_SPECS.get_entry(name)
    _expect(issubclass(spec, PluginSpec), f"{name}: its config model is no PluginSpec")
    raw = {"type": name, "id": f"plugin-{name}", **spec.example}
    cfg = _round_trip(_config(plugins=[raw]), name)
    (parsed,) = cfg.plugins
    _expect(type(parsed) is spec, f"{name}: the config does not parse its own model")
    params = parsed.params(cfg)
    loose = [x for x in jax.tree.leaves(params) if isinstance(x, (int, float)) and not isinstance(x, bool)]
    _expect(not loose, f"{name}: numbers held as Python scalars {loose} (a params leaf is an array)")
    prep = prepare(cfg)
    layers = [la for la in prep.game.layers if isinstance(la, K.PluginLayer)]
    _expect(layers and name in layers[0].types, f"{name}: the prepared game has no such plugin")
    if run:
        res = simulate(cfg, n_arenas=2, seed=1, progress=False)
        _expect(len(res.summary) == 2, f"{name}: a run with it does not finish")


# -- player kinds -----------------------------------------------------------------------------------
def check_player_kind(name: str, *, ask: bool | None = None, operator: Operator | None = None) -> None:
    """A player kind (bdpd_jax.host.player_kinds.register_player_kind): its declared properties, a
    join of its ``example`` accepted, its timeout cap kept, an agent built exactly when it is
    external; ``ask`` (default: external and not remote): one decision of a finite harvest >= 0."""
    from .host.agents.base import AgentResult
    from .host.live.players import LivePlayerConfig, make_agent, player_timeout_ms
    from .host.player_kinds import AgentContext, PlayerKind, player_kind

    kind = player_kind(name)
    _expect(isinstance(kind, PlayerKind) and kind.name == name, f"{name}: not a PlayerKind registered under its name")
    _expect(isinstance(kind.label, str) and kind.label, f"{name}: needs a label (what the dashboard shows)")
    flags = (kind.external, kind.waits, kind.remote, kind.speaks, kind.uses_llm, kind.stands_in)
    _expect(all(isinstance(f, bool) for f in flags), f"{name}: its properties must be bools")
    _expect(kind.external or not (kind.waits or kind.remote), f"{name}: a kernel-decided kind neither waits nor calls")
    cap = kind.timeout_cap_ms
    _expect(cap is None or cap > 0, f"{name}: timeout_cap_ms must be None or > 0")
    spec = LivePlayerConfig.model_validate({"agentType": name, "displayName": "p0", **kind.example})
    _expect(spec.player_kind is kind and spec.external == kind.external, f"{name}: the spec does not read its kind")
    limit = player_timeout_ms(spec, 10_000.0)
    _expect(limit <= (10_000.0 if cap is None else min(cap, 10_000.0)), f"{name}: a deadline past its cap")
    over = LivePlayerConfig.model_validate({**spec.model_dump(mode="json", by_alias=True), "timeoutMs": 20_000.0})
    try:
        player_timeout_ms(over, 10_000.0)
    except ValueError as e:
        _expect("timeoutMs" in str(e), f"{name}: the error does not name timeoutMs: {e}")
    else:
        raise AssertionError(f"{name}: a timeoutMs over the arena's limit is accepted")
    agent = make_agent(spec, AgentContext(timeout_ms=1000.0, no_talk=False, operator=operator))
    _expect((agent is None) == (not kind.external), f"{name}: an agent exactly when the kind is external")
    if ask if ask is not None else kind.external and not kind.remote:
        env = {"turn": 1, "playerId": "p0", "observation": {}, "privateResource": 10.0}
        result = asyncio.run(kind.ask(agent, env, 10.0))
        _expect(isinstance(result, AgentResult), f"{name}: ask gives no AgentResult")
        _expect(math.isfinite(result.harvest) and result.harvest >= 0, f"{name}: harvest {result.harvest!r}")


# -- governance agent kinds -------------------------------------------------------------------------
def check_governor_kind(name: str, *, ask: bool | None = None, operator: Operator | None = None) -> None:
    """A governance agent kind (bdpd_jax.host.governor_kinds.register_governor_kind): a spec of
    its ``example`` accepted and checked against the operator as its player kind's, an agent
    built; ``ask`` (default: the kind does not call out): one answer, in the governance
    vocabulary (``cap``, ``ladder_scale``, ``regen``)."""
    from .host.governor_kinds import GovernorKind, governor_kind
    from .host.live.governance_agent import FIELDS, Governor, checked
    from .host.live.operator import Operator
    from .host.player_kinds import player_kind

    kind = governor_kind(name)
    _expect(isinstance(kind, GovernorKind) and kind.name == name, f"{name}: not a GovernorKind under its name")
    op = operator or Operator()
    spec, timeout = checked({"kind": name, **kind.example}, op, 10_000.0)
    _expect(spec.player_kind is player_kind(name), f"{name}: the spec does not read its player kind")
    gov = Governor(spec, 0, timeout)
    gov.start(None, op)
    _expect(gov.agent is not None, f"{name}: make_agent built no agent")
    if ask if ask is not None else not kind.player_kind.remote:
        d = asyncio.run(gov.ask({}, np.float32))
        _expect(not d.fallback, f"{name}: no answer ({d.error})")
        _expect(set(d.action) <= set(FIELDS), f"{name}: actions outside {FIELDS}: {sorted(d.action)}")
    asyncio.run(gov.aclose())


__all__ = [
    "check_engine",
    "check_governor_kind",
    "check_perturbation_type",
    "check_player_kind",
    "check_plugin",
    "check_term_type",
]
