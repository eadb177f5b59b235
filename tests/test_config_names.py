"""Config names: snake_case attributes in Python, camelCase keys on the wire (config files, HTTP
bodies, ``model_dump``), one alias table per model (bdpd_jax/config/base.py). No config model has
a camelCase attribute fallback or a dynamic proxy: the engine's fields are the typed
``cfg.model.engine``, flat in the ``model`` block on the wire (issue 36)."""

from __future__ import annotations

import ast
import copy
import json
import re
from pathlib import Path

import pytest
from payloads import MIXED_PLAYERS, SEED_LOGISTIC, SEED_SENECA

from bdpd_jax.config.base import ConfigModel, alias_table
from bdpd_jax.config.engines.logistic import LogisticConfig
from bdpd_jax.config.game import ArenaConfig, ModelConfig, PlayerConfig
from bdpd_jax.config.governance import TalkConfig
from bdpd_jax.host.server import models as _wire_models  # noqa: F401  (its ConfigModel subclasses)
from bdpd_jax.prepare.paths import apply_values, config_base


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
    # the engine's fields: the typed model registered for engineMode, flat again on dump
    e = m.engine
    assert isinstance(e, LogisticConfig)
    assert (e.commons_initial, e.regen_rate, e.use_hidden_reserve, e.collapse_die.success_threshold) == (
        150,
        0.12,
        True,
        4,
    )
    e.regen_rate = 0.3
    assert m.model_dump()["regenRate"] == 0.3 and "engine" not in m.model_dump()
    assert (cfg.agent_timeout, cfg.players[2].private_resource, cfg.players[2].reduction_factor) == (30000, 10, 1.0)
    # either spelling validates, the snake_case one from Python
    assert PlayerConfig(private_resource=5.0) == PlayerConfig.model_validate({"privateResource": 5.0})
    assert TalkConfig(accept_min_cap=2.0).model_dump()["acceptMinCap"] == 2.0
    assert ModelConfig(max_turns=7, regen_rate=0.3).model_dump()["regenRate"] == 0.3
    # an engine model passed whole from Python, its fields with the block's flat keys
    made = ModelConfig(max_turns=7, engine=LogisticConfig(regen_rate=0.3), threshold=5.0).engine
    assert isinstance(made, LogisticConfig) and (made.regen_rate, made.threshold) == (0.3, 5.0)


def test_engine_fields_are_flat_on_the_wire_only():
    """The edge: only the flat layout validates and dumps; a nested ``engine`` key is not the wire,
    the JSON schema has no ``engine`` property, and a user's unset fields stay unset."""
    with pytest.raises(ValueError, match=r"model\.engine: not a field of engineMode='logistic'"):
        ArenaConfig.model_validate({"model": {"engine": {"regenRate": 0.2}}})
    given = ArenaConfig.model_validate({"model": {"regenRate": 0.2, "maxTurns": 5}}).model_dump(exclude_unset=True)
    assert given == {"model": {"regenRate": 0.2, "maxTurns": 5}}
    assert "engine" not in ModelConfig.model_json_schema().get("properties", {})
    with pytest.raises(ValueError, match=r"model\.regenRate: 1e\+39 is outside the valid range"):
        ArenaConfig.model_validate({"model": {"regenRate": 1e39}})  # the path of the wire, not of the nesting
    # a sweep's wire path is resolved against the flat dump and applied by validating it
    base = config_base(ArenaConfig.model_validate(_config()))
    assert base.resolve("model.collapseDie.sides") == (["model", "collapseDie", "sides"], 6)
    point = apply_values(base, ["model.regenRate", "model.collapseDie.sides"], [0.2, 8])
    assert (point.model.engine.regen_rate, point.model.engine.collapse_die.sides) == (0.2, 8)


def test_camel_case_attributes_are_not_read_or_written():
    cfg = ArenaConfig.model_validate(_config())
    for obj, name in (
        (cfg.model, "maxTurns"),
        (cfg.model, "regenRate"),
        (cfg.model.engine, "regenRate"),
        (cfg, "agentTimeout"),
    ):
        with pytest.raises(AttributeError):
            getattr(obj, name)
    with pytest.raises(AttributeError):
        _ = cfg.model.regen_rate  # the engine's fields live on cfg.model.engine only
    with pytest.raises(ValueError):  # pydantic refuses a name that is no field (no silent alias)
        cfg.players[0].privateResource = 12.0


def _config_classes() -> list[tuple[str, ast.ClassDef]]:
    root = Path(__file__).resolve().parents[1] / "bdpd_jax" / "config"
    return [
        (f"{f.relative_to(root.parents[1])}:{c.name}", c)
        for f in sorted(root.rglob("*.py"))
        for c in ast.walk(ast.parse(f.read_text()))
        if isinstance(c, ast.ClassDef)
    ]


def test_no_config_class_proxies_attributes():
    """No class in bdpd_jax/config/ defines ``__getattr__``/``__setattr__`` (also under an
    ``if``): every read is a declared field the type checker sees."""
    found = [
        f"{where}.{n.name}"
        for where, c in _config_classes()
        for n in ast.walk(c)
        if isinstance(n, ast.FunctionDef) and n.name in ("__getattr__", "__setattr__", "__getattribute__")
    ]
    assert len(_config_classes()) > 20 and found == []
    dynamic = [m for m in _subclasses(ConfigModel) if "__getattr__" in vars(m) or "__setattr__" in vars(m)]
    assert [m.__name__ for m in dynamic if m.__module__.startswith("bdpd_jax.")] == []


def test_every_config_field_is_snake_case_with_a_camel_case_alias():
    models = [c for c in _subclasses(ConfigModel) if c.__module__.startswith("bdpd_jax.")]
    assert len(models) > 20
    for model in models:
        for name, field in model.model_fields.items():
            assert re.fullmatch(r"[a-z][a-z0-9_]*", name), (model.__name__, name)
            assert field.alias is None or re.fullmatch(r"[a-z][a-zA-Z0-9]*", field.alias), (model.__name__, name)


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
