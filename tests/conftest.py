"""Test settings: the package's XLA flags, two forced CPU devices (sharding without a GPU),
and a hypothesis profile sized for CI."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

# bdpd_jax/_env.py loaded on its own: importing the package would start jax's backend before
# the device count below is set.
_spec = importlib.util.spec_from_file_location(
    "_bdpd_env", Path(__file__).resolve().parents[1] / "bdpd_jax" / "_env.py"
)
_env = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_env)
_env.apply_env()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 2)

import pytest  # noqa: E402
from hypothesis import HealthCheck, Phase, settings  # noqa: E402

settings.register_profile(
    "ci",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking: failures print at once
)
settings.register_profile("dev", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

from payloads import HEAVY, MIXED_PLAYERS, SEED_LOGISTIC, SEED_SENECA, size  # noqa: E402,F401


@pytest.fixture
def logistic_config() -> dict:
    import copy

    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    return cfg
