"""Shared test data: the seed payloads and player mixes, and the heavy-case sizing."""

from __future__ import annotations

import copy
import os

HEAVY = os.environ.get("BDPD_HEAVY") == "1"


def size(small: int, full: int) -> int:
    """Heavy cases run full size only with BDPD_HEAVY=1 (a heavy parametrized test runs its
    first case in CI and every case with it: ``CASES if HEAVY else CASES[:1]``)."""
    return full if HEAVY else small


SEED_LOGISTIC = {
    "model": {
        "name": "fishery_commons_v1",
        "engineMode": "logistic",
        "scheduler": "simultaneous",
        "maxPlayers": 4,
        "minPlayers": 4,
        "maxTurns": 30,
        "commonsInitial": 150,
        "commonsCapacity": 150,
        "regenRate": 0.12,
        "threshold": 10,
        "useHiddenReserve": True,
        "hiddenReserveInitial": 20,
        "collapseDie": {"sides": 6, "successThreshold": 4},
    },
    "observability": {
        "commonsStock": {"visible": True, "noise": 0.05},
        "regenRate": {"visible": False},
        "nPlayers": {"visible": True, "noise": 0.0},
        "othersWealth": {"visible": True, "noise": 0.1},
        "othersHarvest": {"visible": True, "noise": 0.0},
    },
    "agentTimeout": 30000,
}

SEED_SENECA = {
    "model": {
        "name": "seneca_lab_01",
        "engineMode": "seneca",
        "scheduler": "simultaneous",
        "maxPlayers": 4,
        "minPlayers": 2,
        "maxTurns": 80,
        "commonsInitial": 1.0,
        "seneca": {"k1": 0.03, "k2": 0.30, "l2": 0.01},
    },
    "observability": {
        "capitalStock": {"visible": True, "noise": 0.0},
        "pollutionLevel": {"visible": False},
    },
}

MIXED_PLAYERS = [
    {"strategy": "conservative", "privateResource": 30},
    {"strategy": "aggressive", "intensity": 0.5, "privateResource": 30},
    {"strategy": "adaptive", "reductionFactor": 1.0, "privateResource": 10},
    {"strategy": "random", "privateResource": 50},
]


def set_path(base: dict, path: str, value) -> dict:
    """A deep copy of ``base`` with ``value`` at a dotted ``path`` ("model.regenRate",
    "players.0.strategy": list indices as numbers); missing dicts on the way are created."""
    cfg = copy.deepcopy(base)
    node = cfg
    *parents, last = path.split(".")
    for k in parents:
        node = node[int(k)] if isinstance(node, list) else node.setdefault(k, {})
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return cfg


def sweep_config() -> dict:
    """A small noisy logistic arena with the mixed players, shared by the sweep tests."""
    c = copy.deepcopy(SEED_LOGISTIC)
    c["players"] = copy.deepcopy(MIXED_PLAYERS)
    c["model"]["maxTurns"] = 12
    c["observability"]["commonsStock"]["noise"] = 0.2
    return c
