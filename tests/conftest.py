"""Test settings: the package's XLA flags, two forced CPU devices (sharding without a GPU),
one persistent compilation cache per run, and a hypothesis profile sized for CI."""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import tempfile
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

# One persistent compilation cache for the whole run, fresh each run (a warm cache from an
# earlier run would hide compile time): the xdist workers, and the subprocesses the tests start
# (the CLI, the studies), inherit it through the environment, so a program compiled by one
# process is loaded by the others instead of compiled again. The process that made it (the
# controller, or the only process without xdist) removes it at exit.
if "BDPD_TEST_JAX_CACHE" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="bdpd_jax_test_cache_")
    os.environ["BDPD_TEST_JAX_CACHE"] = _cache
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)
for _k, _v in {
    "JAX_COMPILATION_CACHE_DIR": os.environ["BDPD_TEST_JAX_CACHE"],
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "BDPD_JAX_CACHE": os.environ["BDPD_TEST_JAX_CACHE"],  # the CLI's own cache folder (_env.enable_compile_cache)
    # the subprocesses' jax sees the test processes' two CPU devices: a program's cache key depends on
    # the device count, so with one device a subprocess could load none of the workers' programs (the
    # killed-run replay test: 82 of its 84 programs loaded instead of compiled, 20 -> 12 s)
    "JAX_NUM_CPU_DEVICES": "2",
}.items():
    os.environ[_k] = _v

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 2)
jax.config.update("jax_compilation_cache_dir", os.environ["BDPD_TEST_JAX_CACHE"])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)

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


def pytest_collection_modifyitems(config, items) -> None:
    """The study notebooks first (the longest cases; run first they leave no long tail when the
    suite runs on two xdist workers), the order otherwise as collected."""
    items.sort(key=lambda item: item.path.name != "test_studies.py")
