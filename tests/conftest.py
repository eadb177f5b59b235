"""Test settings: the package's XLA flags, two forced CPU devices (sharding without a GPU),
and a hypothesis profile sized for CI."""

from __future__ import annotations

import os

from bdpd_jax._env import apply_env

apply_env()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

try:
    jax.config.update("jax_num_cpu_devices", 2)
except Exception:  # backend already initialised by an earlier import: one device is fine
    pass

import pytest  # noqa: E402
from hypothesis import HealthCheck, Phase, settings  # noqa: E402

settings.register_profile(
    "ci", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking: failures print at once
)
settings.register_profile("dev", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

HEAVY = os.environ.get("BDPD_HEAVY") == "1"


def size(small: int, full: int) -> int:
    """Heavy cases run full size only with BDPD_HEAVY=1."""
    return full if HEAVY else small


SEED_LOGISTIC = {
    "model": {
        "name": "fishery_commons_v1", "engineMode": "logistic", "scheduler": "simultaneous",
        "maxPlayers": 4, "minPlayers": 4, "maxTurns": 30, "commonsInitial": 150, "commonsCapacity": 150,
        "regenRate": 0.12, "threshold": 10, "useHiddenReserve": True, "hiddenReserveInitial": 20,
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
        "name": "seneca_lab_01", "engineMode": "seneca", "scheduler": "simultaneous",
        "maxPlayers": 4, "minPlayers": 2, "maxTurns": 80, "commonsInitial": 1.0,
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


@pytest.fixture
def logistic_config() -> dict:
    import copy

    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    return cfg
