"""Config validation: the seed payloads pass; every bad input is a clear ValueError."""

from __future__ import annotations

import copy
import math

import pytest

from bdpd_jax import ArenaConfig, simulate
from bdpd_jax.config import default_config
from payloads import MIXED_PLAYERS, SEED_LOGISTIC, SEED_SENECA


def test_seed_logistic_example_validates():
    cfg = ArenaConfig.model_validate(SEED_LOGISTIC)
    assert cfg.model.collapseDie.sides == 6 and cfg.model.useHiddenReserve
    assert cfg.observability["regenRate"].visible is False


def test_seed_seneca_example_validates():
    cfg = ArenaConfig.model_validate(SEED_SENECA)
    assert cfg.model.engineMode == "seneca" and cfg.model.commonsInitial == 1.0


def test_defaults_are_the_seeds():
    m = ArenaConfig.model_validate({}).model
    assert (m.commonsInitial, m.commonsCapacity, m.regenRate, m.threshold) == (150, 150, 0.12, 10)
    assert m.hiddenReserveInitial == 20 and m.useHiddenReserve and m.maxTurns == 30
    assert ArenaConfig.model_validate({}).agentTimeout == 30000


def _with(path: str, value, base=None) -> dict:
    cfg = copy.deepcopy(base or {**SEED_LOGISTIC, "players": MIXED_PLAYERS})
    node = cfg
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node.setdefault(k, {})
    last = keys[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return cfg


BAD = [
    ("model.engineMode", "lotka", "engineMode"),
    ("model.scheduler", "round-robin", "scheduler"),
    ("players.0.strategy", "greedy", "strategy"),
    ("model.regenRate", -0.1, "regenRate"),
    ("model.regenRate", math.nan, "regenRate"),
    ("model.commonsCapacity", math.inf, "commonsCapacity"),
    ("model.threshold", -1, "threshold"),
    ("model.minPlayers", 5, "minPlayers"),
    ("observability.commonsStock.noise", -0.5, "noise"),
    ("observability.fishCount", {"visible": True}, "fishCount"),
    ("model.colour", "blue", "colour"),
    ("players.1.intensity", 1.5, "intensity"),
    ("players.2.privateResource", -3, "privateResource"),
    ("model.collapseDie.successThreshold", 7, "successThreshold"),
    ("observability.nPlayers.resolution", "qualitative", "resolution"),
    ("observability.capitalStock", {"visible": True}, "capitalStock"),
]


@pytest.mark.parametrize("path,value,needle", BAD, ids=[b[0] + "=" + repr(b[1]) for b in BAD])
def test_bad_config_is_a_clear_error(path, value, needle):
    with pytest.raises(ValueError) as e:
        ArenaConfig.model_validate(_with(path, value))
    msg = str(e.value)
    assert needle in msg
    # the message shows the offending value
    assert repr(value) in msg or str(value) in msg or needle == "colour" or isinstance(value, dict)


def test_player_count_outside_bounds():
    cfg = _with("players", MIXED_PLAYERS[:3])
    with pytest.raises(ValueError, match=r"players: 3 players is outside \[minPlayers=4, maxPlayers=4\]"):
        ArenaConfig.model_validate(cfg)


def test_unknown_top_level_key():
    with pytest.raises(ValueError, match="agentTimeOut"):
        ArenaConfig.model_validate({**SEED_LOGISTIC, "agentTimeOut": 5})


def test_seneca_rejects_hidden_reserve():
    cfg = copy.deepcopy(SEED_SENECA)
    cfg["model"]["useHiddenReserve"] = True
    with pytest.raises(ValueError, match="logistic-only"):
        ArenaConfig.model_validate(cfg)


def test_run_without_players_is_a_clear_error():
    with pytest.raises(ValueError, match="players"):
        simulate(SEED_LOGISTIC, n_arenas=2)


@pytest.mark.parametrize("kw", [{"n_arenas": 0}, {"seed": -1}, {"turns": 0}, {"chunk_turns": -2}])
def test_bad_run_arguments(kw):
    args = {"n_arenas": 1, **kw}
    with pytest.raises(ValueError, match=next(iter(kw))):
        simulate(default_config(), **args)


def test_load_from_path_and_missing_file(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(default_config().model_dump_json())
    assert ArenaConfig.load(p).model.name == "fishery_commons_v1"
    with pytest.raises(ValueError, match="no such file"):
        ArenaConfig.load(tmp_path / "missing.json")
