"""The registry contract (issue 15 item 7): every registered pact term type and perturbation
type, read from the registries when the test runs (a type registered later is covered with
no edit here), has what the rest of the package reads and works end to end:

- a term type: a checker (limit), fields with bounds that the kernel, the config, the tools
  and their JSON schema all apply alike, a detail string, a round trip through the config and
  the slot's stored numbers, and violation and sanction rows in a tiny ``simulate`` batch;
- a perturbation type: an effect (``apply``), a field map (engine field, target kind, label), a
  config model with an example payload that round-trips through the config, and one row per
  firing in a tiny ``simulate`` batch.
"""

from __future__ import annotations

import copy
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from payloads import SEED_LOGISTIC

import bdpd_jax
from bdpd_jax.config.base import wire_names
from bdpd_jax.config.game import ArenaConfig, ModelConfig
from bdpd_jax.config.perturbations import ARENA_SPECS, SPEC_TYPES, ArenaSpec
from bdpd_jax.config.terms import detail, numbers, parse_terms, slot_terms, terms_schema
from bdpd_jax.host.live.registry import PactRegistry
from bdpd_jax.host.live.tools import tool_schemas, validate_action
from bdpd_jax.kernels import pacts as P
from bdpd_jax.kernels import perturb as pk
from bdpd_jax.kernels.engines import ENGINES
from bdpd_jax.kernels.governance import NAME as GOV
from bdpd_jax.kernels.perturb_registry import View
from bdpd_jax.prepare.game import build
from bdpd_jax.results import decode

PLAYERS = [
    {"strategy": "aggressive", "intensity": 0.9, "privateResource": 10, "name": "a"},
    {"strategy": "aggressive", "intensity": 0.3, "privateResource": 20, "name": "b"},
    {"strategy": "conservative", "privateResource": 30, "name": "c"},
]


def _cfg(engine: str = "logistic", **extra) -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(maxPlayers=3, minPlayers=2, maxTurns=4, engineMode=engine)
    if engine != "logistic":  # the seed's engine fields are the logistic engine's own: other engines' defaults
        cfg["model"] = {k: v for k, v in cfg["model"].items() if k in wire_names(ModelConfig)}
    cfg["players"] = copy.deepcopy(PLAYERS)
    cfg.update(extra)
    return cfg


def _tight_terms(name: str) -> dict:
    """Terms of ``name`` with every field just inside its bound (a tight limit)."""
    out: dict = {"type": name}
    for f in P.term_type(name).fields:
        out[f.name] = f.minimum + 0.01
    return out


@jax.jit
def _propose(table, term, mh, tol):
    """Party 0 proposes to parties 0 and 1 at turn 1 (one program for every type's numbers)."""
    return P.propose(table, 0, jnp.asarray([True, True, False]), term, mh, tol, 1)


def _bad_value(f: P.TermField) -> float:
    return f.minimum if f.exclusive else f.minimum - 1.0


# -- term types ---------------------------------------------------------------------------------
def test_every_term_type_has_a_checker_fields_schema_and_detail():
    schema = terms_schema()
    tool_terms = tool_schemas()[3]["function"]["parameters"]["properties"]["terms"]
    assert schema["properties"]["type"]["enum"] == list(P.term_names()) == tool_terms["properties"]["type"]["enum"]
    for code, name in enumerate(P.term_names()):
        tt = P.term_type(name)
        assert (tt.name, P.term_code(name), P.term_type(code)) == (name, code, tt)
        assert callable(tt.limit) and tt.detail and tt.description, name
        assert {f.number for f in tt.fields} <= set(P.NUMBERS) and len({f.name for f in tt.fields}) == len(tt.fields)
        # the checker gives one limit per slot, finite on a table of this type
        table = _propose(P.empty(3, 3), code, *map(jnp.float32, numbers(parse_terms(_tight_terms(name)))))[0]
        lim = np.broadcast_to(np.asarray(tt.limit(table, P.TurnContext(group_mean=jnp.float32(1.0)))), (3,))
        assert np.isfinite(lim[0]), name
        # the detail string formats with the three numbers
        text = detail(name, 2.0, 1.0, 0.5)
        assert isinstance(text, str) and text and "{" not in text, name
        for f in tt.fields:
            assert f.name in schema["properties"] and f.name in tool_terms["properties"], (name, f.name)
            bound = schema["properties"][f.name]
            assert bound.get("exclusiveMinimum" if f.exclusive else "minimum") == f.minimum, (name, f.name)


def test_every_term_types_bounds_are_one_rule_in_the_kernel_config_and_tools():
    for code, name in enumerate(P.term_names()):
        good = _tight_terms(name)
        assert parse_terms(good) == {k: (float(v) if k != "type" else v) for k, v in good.items()}
        assert validate_action({"tool": "propose_pact", "parties": ["a"], "terms": good})["terms"] == parse_terms(good)
        assert bool(P.valid_terms(jnp.int32(code), *map(jnp.float32, numbers(parse_terms(good)))))
        for f in P.term_type(name).fields:
            bad = {**good, f.name: _bad_value(f)}
            with pytest.raises(ValueError, match=f"terms.{f.name}"):
                parse_terms(bad)
            with pytest.raises(ValueError, match=f"terms.{f.name}"):
                validate_action({"tool": "propose_pact", "parties": ["a"], "terms": bad})
            with pytest.raises(ValueError, match=f"(?s)pacts.*terms.{f.name}"):
                ArenaConfig.model_validate(_cfg(pacts=[{"parties": ["a", "b"], "terms": bad}]))
            # the kernel refuses the same numbers: the proposal is not stored, and counted
            mh, tol = numbers(parse_terms(good) | {f.name: _bad_value(f)})
            table, slot = _propose(P.empty(3, 3), code, jnp.float32(mh), jnp.float32(tol))
            assert int(slot) == -1 and int(table.invalid) == 1, (name, f.name)
        with pytest.raises(ValueError, match="terms.nope"):
            parse_terms({**good, "nope": 1.0})


def test_every_term_type_round_trips_through_the_config_and_the_stored_numbers():
    for name in P.term_names():
        terms = parse_terms(_tight_terms(name))
        cfg = ArenaConfig.model_validate(_cfg(pacts=[{"parties": ["a", "b"], "terms": terms}]))
        again = ArenaConfig.model_validate(cfg.model_dump(mode="json"))
        assert again.model_dump(mode="json") == cfg.model_dump(mode="json")
        mh, tol = numbers(terms)
        assert slot_terms(P.term_code(name), {"max_harvest": mh, "tolerance": tol}) == terms


def test_every_term_type_gives_live_violations_with_detail_strings():
    players = ["a", "b"]
    reg = PactRegistry(P.empty(len(P.term_names()), 2), players, seed=1)
    for name in P.term_names():
        slot, why = reg.propose("a", players, parse_terms(_tight_terms(name)), turn=1)
        assert slot >= 0, why
        reg.accept(slot, "b", turn=1)
    assert [p["status"] for p in reg.compact()] == ["active"] * len(P.term_names())
    violated = np.ones((len(P.term_names()), 2), bool)
    end = {"violated": violated, "term": np.asarray(reg.table.term), "ordinal": np.ones_like(violated, np.int32)}
    decoded = decode.violation_columns(decode.one_turn({GOV: {"end": end}}, 2), np.zeros(1, np.int64))
    events = reg.record_violations(decoded, np.asarray([5.0, 7.0], np.float32), np.zeros(2))
    assert [(e["termType"], e["partyId"]) for e in events] == [(n, p) for n in P.term_names() for p in players]
    for e in events:
        assert e["detail"] and "{" not in e["detail"] and ("5.000" in e["detail"] or "7.000" in e["detail"])


def _term_pacts_and_sanctions() -> tuple[list, list]:
    """A tight pact of every term type among the three players, each sanctioned by its own spec."""
    names = P.term_names()
    pacts = [{"parties": ["a", "b", "c"], "terms": _tight_terms(n)} for n in names]
    sanctions = [
        {
            "id": f"s-{n}",
            "type": "sanction",
            "trigger": {"kind": "pact_violation", "termType": n},
            "payload": {"amount": 0.25, "reason": n},
        }
        for n in names
    ]
    return pacts, sanctions


def _engine_for(name: str) -> str:
    return next(e for e, eng in ENGINES.items() if pk.supported(eng, name))


def _spec(name: str, turn: int = 2) -> dict:
    return {
        "id": f"p-{name}",
        "type": name,
        "trigger": {"kind": "turn", "turn": turn},
        "payload": copy.deepcopy(ARENA_SPECS[name].example),
    }


def _turn_of(k: int) -> int:
    return 2 + k % 2


@pytest.fixture(scope="module")
def logistic_run():
    """One tiny batch (one compile) with every term type's pact and every perturbation type the
    logistic engine supports; the tests below read their own rows."""
    pacts, sanctions = _term_pacts_and_sanctions()
    names = [n for n in pk.type_names() if _engine_for(n) == "logistic"]
    specs = [_spec(n, _turn_of(k)) for k, n in enumerate(names)]
    return names, bdpd_jax.simulate(_cfg(pacts=pacts, perturbations=sanctions + specs), n_arenas=2, seed=5)


def test_every_term_type_runs_in_a_batch_with_violation_and_sanction_rows(logistic_run):
    names = P.term_names()
    res = logistic_run[1]
    v, s = res.violations, res.sanctions
    for code, n in enumerate(names):
        mine = v[v.term_type == n]
        assert len(mine) > 0, f"{n}: no violation of a tight limit by aggressive players"
        assert set(mine.pact) == {code}  # pact k of the config is slot k
        got = s[s.term_type == n]
        assert len(got) == len(mine) and set(got.id) == {f"s-{n}"} and set(got.reason) == {n}
        assert np.allclose(got.amount, 0.25)
    assert set(v.term_type) <= set(names)


# -- perturbation types -------------------------------------------------------------------------
def test_every_perturbation_type_has_an_effect_a_field_map_and_a_config_model():
    assert set(pk.type_names()) == set(ARENA_SPECS) <= set(SPEC_TYPES)
    view_fields = set(View._fields)
    for code, name in enumerate(pk.type_names()):
        pt = pk.perturbation_type(name)
        assert (pt.name, pk.type_code(name), pk.perturbation_type(code)) == (name, code, pt)
        assert callable(pt.apply) and pt.label and pt.description, name
        assert pt.target in ("none", "player", "variable")
        assert pt.requires is None or any(pt.requires in e.features for e in ENGINES.values()), name
        spec = ARENA_SPECS[name]
        assert issubclass(spec, ArenaSpec) and SPEC_TYPES[name] is spec
        assert isinstance(spec.example, dict), f"{name}: its ArenaSpec needs an example payload"
        layer = pk.PerturbLayer(types=(name,), n_slots=1)
        assert layer.fields == (() if pt.engine_field is None else (pt.engine_field,))
        if pt.engine_field is not None:  # the field map: every engine it applies to has the field
            for e, eng in ENGINES.items():
                if pk.supported(eng, name):
                    game, params = build(ArenaConfig.model_validate(_cfg(e)))
                    assert math.isfinite(float(game.engine.get_param(params.engine, pt.engine_field))), (name, e)
        assert "engine" in view_fields and {"wealth", "strategy", "visible", "engine_state"} <= view_fields


def test_every_perturbation_type_round_trips_through_the_config():
    for name in pk.type_names():
        cfg = ArenaConfig.model_validate(_cfg(_engine_for(name), perturbations=[_spec(name)]))
        (spec,) = cfg.perturbations
        assert type(spec) is ARENA_SPECS[name]
        again = ArenaConfig.model_validate(cfg.model_dump(mode="json"))
        assert again.model_dump(mode="json") == cfg.model_dump(mode="json")
        assert spec.numbers(cfg, "p")["code"] == pk.type_code(name)
        with pytest.raises(ValueError, match=r"perturbations\[0\]"):
            ArenaConfig.model_validate(_cfg(_engine_for(name), perturbations=[{**_spec(name), "payload": {"nope": 1}}]))


def test_every_perturbation_type_fires_once_in_a_batch_with_a_results_row(logistic_run):
    runs = [logistic_run]
    others: dict[str, list[str]] = {}
    for name in pk.type_names():
        if _engine_for(name) != "logistic":
            others.setdefault(_engine_for(name), []).append(name)
    for engine, names in others.items():
        specs = [_spec(n, _turn_of(k)) for k, n in enumerate(names)]
        runs.append((names, bdpd_jax.simulate(_cfg(engine, perturbations=specs), n_arenas=2, seed=3)))
    for names, res in runs:
        pf = res.perturbations
        for k, n in enumerate(names):
            rows = pf[pf.id == f"p-{n}"]
            assert list(rows.arena) == [0, 1] and set(rows.type) == {n} and set(rows.turn) == {_turn_of(k)}, n
            label = pk.perturbation_type(n).label
            assert all(t.startswith(label) for t in rows.target), (n, set(rows.target))
            assert set(rows.target) <= {decode.target_label(n, t) for t in (pk.ALL, 0, 1, 2)} | {
                f"{label}[{v}]" for v in bdpd_jax.kernels.OBS_VARS
            }
            assert np.isfinite(rows.value.to_numpy(float)).all(), n
