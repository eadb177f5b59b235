"""Config names: snake_case attributes in Python, camelCase keys on the wire (config files, HTTP
bodies, ``model_dump``), one alias table per model (bdpd_jax/config/base.py); old camelCase
attribute reads keep working, and the package itself never uses them."""

from __future__ import annotations

import ast
import copy
import json
import re
from pathlib import Path

import pytest
from payloads import MIXED_PLAYERS, SEED_LOGISTIC, SEED_SENECA

import bdpd_jax
from bdpd_jax.config.base import ConfigModel, alias_table
from bdpd_jax.config.game import ArenaConfig, ModelConfig, PlayerConfig
from bdpd_jax.config.governance import TalkConfig
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.server import models as _wire_models  # noqa: F401  (its ConfigModel subclasses)


def _config() -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    return cfg


def _subclasses(cls: type) -> list[type]:
    out = []
    for c in cls.__subclasses__():
        out += [c, *_subclasses(c)]
    return out


def test_dump_keeps_the_wire_names():
    cfg = ArenaConfig.model_validate(_config())
    wire = json.loads(cfg.model_dump_json())
    assert wire["model"] == {
        **SEED_LOGISTIC["model"],
        "wholeUnits": False,
        "thresholdPlayers": "configured",
        "metricPlayers": "present",
        "survivalHorizon": None,
    }
    assert wire["agentTimeout"] == 30000
    assert wire["players"][2] == {
        "strategy": "adaptive",
        "name": None,
        "intensity": 0.5,
        "reductionFactor": 1.0,
        "privateResource": 10.0,
        "activeFrom": 1,
        "talk": None,
    }
    assert cfg.model_dump() == wire  # the Python dump too
    assert ArenaConfig.model_validate(wire) == cfg
    seneca = ArenaConfig.model_validate(SEED_SENECA).model_dump()["model"]
    assert {"commonsInitial", "seneca"} <= set(seneca) and {"capitalSeed", "harvestScale"} <= set(seneca["seneca"])
    schema = ArenaConfig.model_json_schema()
    assert {"model", "agentTimeout"} <= set(schema["properties"])


def test_python_reads_snake_case():
    cfg = ArenaConfig.model_validate(_config())
    m = cfg.model
    assert (m.engine_mode, m.max_players, m.min_players, m.max_turns, m.whole_units) == ("logistic", 4, 4, 30, False)
    # the engine's fields, kept under their keys: read and written by their Python names
    assert (m.commons_initial, m.regen_rate, m.use_hidden_reserve, m.collapse_die.success_threshold) == (
        150,
        0.12,
        True,
        4,
    )
    assert m.engine.regen_rate == 0.12  # the engine's model, as validated
    m.regen_rate = 0.3
    assert m.model_dump()["regenRate"] == 0.3 and m.regenRate == 0.3
    assert (cfg.agent_timeout, cfg.players[2].private_resource, cfg.players[2].reduction_factor) == (30000, 10, 1.0)
    # either spelling validates, the snake_case one from Python
    assert PlayerConfig(private_resource=5.0) == PlayerConfig.model_validate({"privateResource": 5.0})
    assert TalkConfig(accept_min_cap=2.0).model_dump()["acceptMinCap"] == 2.0
    assert ModelConfig(max_turns=7, regen_rate=0.3).model_dump()["regenRate"] == 0.3


def test_old_camel_case_reads_and_writes_still_work():
    cfg = ArenaConfig.model_validate(_config())
    m = cfg.model
    assert m.maxTurns == m.max_turns == 30 and m.engineMode == "logistic"
    assert cfg.agentTimeout == 30000 and cfg.players[3].privateResource == 50
    assert m.regenRate == m.engine.regenRate == 0.12  # the engine's fields, on the block and on its model
    m.regenRate = 0.2
    assert m.regen_rate == 0.2 and m.model_dump()["regenRate"] == 0.2
    assert m.collapseDie.successThreshold == 4
    p = cfg.players[0]
    p.privateResource = 12.0
    assert p.private_resource == 12.0 and p.model_dump()["privateResource"] == 12.0
    with pytest.raises(AttributeError):
        _ = m.maxTurn  # a name in no alias table is still an error
    assert not hasattr(cfg, "agent_timeoutMs")


def test_every_config_field_is_snake_case_with_a_camel_case_alias():
    models = [c for c in _subclasses(ConfigModel) if c.__module__.startswith("bdpd_jax.")]
    assert len(models) > 20
    for model in models:
        for name, field in model.model_fields.items():
            assert re.fullmatch(r"[a-z][a-z0-9_]*", name), (model.__name__, name)
            assert field.alias is None or re.fullmatch(r"[a-z][a-zA-Z0-9]*", field.alias), (model.__name__, name)


RICH = {
    "players": [
        {
            "strategy": "conservative",
            "name": "ann",
            "talk": {
                "announce": "honest",
                "comply": True,
                "pledge": {"turn": 1, "maxHarvest": 2},
                "accept": "min_cap",
                "acceptMinCap": 1,
                "declineRejects": False,
            },
        },
        {
            "strategy": "aggressive",
            "talk": {"propose": {"turn": 2, "parties": [0, 1], "terms": {"type": "harvest_cap", "maxHarvest": 3}}},
        },
        {"strategy": "adaptive", "reductionFactor": 0.5, "privateResource": 10},
        {"strategy": "random"},
    ],
    "pacts": [{"parties": [0, 1, 2, 3], "terms": {"type": "no_aggression", "tolerance": 0.1}}],
    "perturbations": [
        {
            "id": "fine",
            "type": "sanction",
            "trigger": {"kind": "pact_violation", "termType": "harvest_cap"},
            "payload": {"amount": 1},
        },
        {"id": "dry", "type": "regen_shock", "trigger": {"kind": "turn", "turn": 3}, "payload": {"factor": 0.5}},
    ],
    "plugins": [{"type": "governance_agent", "id": "gov", "cap": 2.0}],
    "discussion": {"rounds": 0, "nextSpeaker": "round_robin"},
}


def test_the_package_reads_no_config_attribute_by_its_camel_case_name(monkeypatch):
    """Validation, a batch run and its frames, a sweep and a live arena, with every camelCase
    attribute access on a config model (alias fallback or extra field) recorded."""
    seen: list[str] = []
    get, put = ConfigModel.__getattr__, ConfigModel.__setattr__

    def spy_get(self, name):
        if re.search("[A-Z]", name) and not name.startswith("_"):
            seen.append(f"{type(self).__name__}.{name}")
        return get(self, name)

    def spy_set(self, name, value):
        if re.search("[A-Z]", name) and not name.startswith("_"):
            seen.append(f"{type(self).__name__}.{name} =")
        return put(self, name, value)

    monkeypatch.setattr(ConfigModel, "__getattr__", spy_get)
    monkeypatch.setattr(ConfigModel, "__setattr__", spy_set)
    cfg = _config()
    cfg["model"]["maxTurns"] = 5
    cfg.update(copy.deepcopy(RICH))
    m = ArenaConfig.model_validate(cfg).model
    assert not seen
    assert m.maxTurns == 5 and seen == ["ModelConfig.maxTurns"]  # the spy sees a camelCase read
    seen.clear()
    res = bdpd_jax.simulate(cfg, n_arenas=2, seed=0, progress=False)
    _ = (res.summary, res.turns, res.players, res.extra)
    bdpd_jax.sweep(cfg, grid={"model.regenRate": [0.1, 0.2]}, replicates=1, seed=0, progress=False)
    arena = Arena(cfg, seed=0)
    arena.run()
    arena.summary()
    assert sorted(set(seen)) == []


def test_no_module_reads_a_config_alias_as_an_attribute():
    """The same rule read from the source, every module: ``x.regenRate`` for the camelCase alias
    of a config or wire model (``spec.agentType`` of a joining player, ``body.tickMode`` of a
    request), and no class declares a camelCase field any more (the host's HTTP models alias too)."""
    root = Path(__file__).resolve().parents[1]
    files = [*(root / "bdpd_jax").rglob("*.py"), *(root / "kernels").rglob("*.py")]
    trees = {f: ast.parse(f.read_text()) for f in files}
    camel_fields = [
        f"{f.relative_to(root)}:{n.lineno}: {n.target.id}"
        for f, t in trees.items()
        for c in ast.walk(t)
        if isinstance(c, ast.ClassDef)
        for n in c.body
        if isinstance(n, ast.AnnAssign)
        and isinstance(n.target, ast.Name)
        and re.match("[a-z][a-z0-9_]*[A-Z]", n.target.id)
    ]
    assert camel_fields == []
    aliases = {a for c in _subclasses(ConfigModel) if c.__module__.startswith("bdpd_jax.") for a in alias_table(c)}
    assert {"regenRate", "maxTurns", "acceptMinCap"} <= aliases
    assert {"agentType", "tickMode", "arenaId", "baseUrl", "displayName", "httpUrls", "timeoutMs"} <= aliases
    hits = [
        f"{f.relative_to(root)}:{n.lineno}: .{n.attr}"
        for f, t in trees.items()
        for n in ast.walk(t)
        if isinstance(n, ast.Attribute) and n.attr in aliases
    ]
    assert hits == []
