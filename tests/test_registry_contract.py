"""The registry contract (issue 15 item 7; issue 36: the public checks of ``bdpd_jax.testing``):
every registered pact term type, perturbation type, plugin type and player kind, read from the
registries when the test runs (a type registered later is covered with no edit here), has what
the rest of the package reads and works end to end:

- a term type: a checker (limit), fields with bounds that the kernel, the config, the tools
  and their JSON schema all apply alike, a detail string, a round trip through the config and
  the slot's stored numbers, and violation and sanction rows in a tiny ``simulate`` batch;
- a perturbation type: an effect (``apply``), a field map (engine field, target kind, label), a
  config model with an example payload that round-trips through the config, and one row per
  firing in a tiny ``simulate`` batch;
- a plugin type: its kernel part and config model, an example that prepares, array params;
- a player kind: its declared properties, a join of its example, its time cap, its agent.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from payloads import SEED_LOGISTIC

import bdpd_jax
from bdpd_jax.config.base import wire_names
from bdpd_jax.config.game import ModelConfig
from bdpd_jax.config.perturbations import ARENA_SPECS, SPEC_TYPES
from bdpd_jax.config.terms import parse_terms, terms_schema
from bdpd_jax.host.agents.tools import tool_schemas
from bdpd_jax.host.governor_kinds import GOVERNOR_KINDS
from bdpd_jax.host.live.operator import Operator
from bdpd_jax.host.live.registry import PactRegistry
from bdpd_jax.host.player_kinds import PLAYER_KINDS
from bdpd_jax.kernels import pacts as P
from bdpd_jax.kernels import perturb as pk
from bdpd_jax.kernels import plugins as K
from bdpd_jax.kernels.engines import ENGINES
from bdpd_jax.kernels.governance import NAME as GOV
from bdpd_jax.results import decode
from bdpd_jax.testing import (
    check_governor_kind,
    check_perturbation_type,
    check_player_kind,
    check_plugin,
    check_term_type,
)

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


# -- term types ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", P.term_names())
def test_every_term_type_passes_the_public_contract_check(name):
    """A checker, fields whose bounds the kernel, config, tools and schema apply alike, a detail
    string, and a round trip through the config and the stored numbers (bdpd_jax.testing)."""
    check_term_type(name)


def test_the_tool_schema_lists_every_term_type():
    schema = terms_schema()
    tool_terms = tool_schemas()[3]["function"]["parameters"]["properties"]["terms"]
    assert schema["properties"]["type"]["enum"] == list(P.term_names()) == tool_terms["properties"]["type"]["enum"]


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
@pytest.mark.parametrize("name", pk.type_names())
def test_every_perturbation_type_passes_the_public_contract_check(name):
    """An effect, a field map, a config model with an example that round-trips to a slot of its
    code, a bad payload refused by field (bdpd_jax.testing.check_perturbation_type)."""
    check_perturbation_type(name)


def test_the_kernel_and_config_registries_hold_the_same_perturbation_types():
    assert set(pk.type_names()) == set(ARENA_SPECS) <= set(SPEC_TYPES)


# -- plugins and player kinds -------------------------------------------------------------------
@pytest.mark.parametrize("name", K.plugin_names())
def test_every_plugin_type_passes_the_public_contract_check(name):
    check_plugin(name)


@pytest.mark.parametrize("name", sorted(PLAYER_KINDS))
def test_every_player_kind_passes_the_public_contract_check(name):
    """Remote kinds are built, not asked (no endpoint here); the code kind asks a JS worker."""
    check_player_kind(name, operator=Operator(llmBaseUrls=["http://127.0.0.1:8000/v1"]))


@pytest.mark.parametrize("name", sorted(GOVERNOR_KINDS))
def test_every_governance_agent_kind_passes_the_public_contract_check(name):
    """Remote kinds are built, not asked (no endpoint here); the scripted kind answers."""
    check_governor_kind(name, operator=Operator(llmBaseUrls=["http://127.0.0.1:8000/v1"]))


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
