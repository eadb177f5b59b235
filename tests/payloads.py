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


def governed_talk(propose_turn: int, announce: dict | None = None) -> dict:
    """Scripted talk, a pre-declared pact and a graduated sanction on any pact violation: the
    governed arena the live-vs-batch and skip-ended tests share. ``propose_turn``: when player
    3 proposes a no-aggression pact to all; ``announce``: player 1's announcement script."""
    return {
        "players": [
            {
                "strategy": "conservative",
                "talk": {"announce": "honest", "comply": True, "pledge": {"turn": 2, "maxHarvest": 1.2}},
            },
            {"strategy": "aggressive", "talk": {**(announce or {}), "accept": "min_cap", "acceptMinCap": 1.5}},
            {"strategy": "adaptive", "privateResource": 10},
            {
                "strategy": "random",
                "privateResource": 50,
                "talk": {
                    "propose": {
                        "turn": propose_turn,
                        "parties": [0, 1, 2, 3],
                        "terms": {"type": "no_aggression", "tolerance": 0.1},
                    }
                },
            },
        ],
        "pacts": [{"parties": [1, 2], "terms": {"type": "harvest_cap", "maxHarvest": 2.0}}],
        "perturbations": [
            {
                "id": "g",
                "type": "sanction_graduated",
                "trigger": {"kind": "pact_violation"},
                "payload": {"ladder": [0.5, 2.0]},
            }
        ],
    }


def propose_many_args(pacts, reqs: list[tuple], turn: int) -> tuple:
    """``kernels.pacts.propose_many``'s arguments for ``reqs`` (proposer, parties as a set,
    term name, maxHarvest, tolerance, when) on the table ``pacts``, made on ``turn``."""
    import jax.numpy as jnp

    from bdpd_jax.kernels import pacts as P

    n = pacts.parties.shape[-1]
    cols = list(zip(*reqs, strict=True))
    return (
        pacts,
        jnp.asarray(cols[0], jnp.int32),
        jnp.asarray([[i in ps for i in range(n)] for ps in cols[1]]),
        jnp.asarray([P.term_code(t) for t in cols[2]], jnp.int32),
        jnp.asarray(cols[3], jnp.float32),
        jnp.asarray(cols[4], jnp.float32),
        jnp.int32(turn),
        jnp.asarray(cols[5]),
    )
