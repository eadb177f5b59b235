"""Importing bdpd_jax changes nothing in the process; ``bdpd_jax.configure()`` (and the CLI)
sets the package's process settings only where the user has not (docs/semantics/performance.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

KEYS = ("XLA_FLAGS", "EQX_ON_ERROR")
SHOW = "print(json.dumps({k: os.environ.get(k) for k in ('XLA_FLAGS', 'EQX_ON_ERROR')}))"


def _probe(code: str, **env: str | None) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in KEYS}
    base.update({k: v for k, v in env.items() if v is not None})
    out = subprocess.run(
        [sys.executable, "-c", f"import os, json, warnings; {code}; {SHOW}"],
        env=base,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_changes_no_environment_and_loads_nothing_heavy() -> None:
    got = _probe("import sys, bdpd_jax; assert 'jax' not in sys.modules and 'equinox' not in sys.modules")
    assert got == {"XLA_FLAGS": None, "EQX_ON_ERROR": None}


def test_configure_sets_only_what_is_unset() -> None:
    from bdpd_jax._env import XLA_DEFAULTS, YNN_OFF

    assert _probe("import bdpd_jax; bdpd_jax.configure()") == {"XLA_FLAGS": XLA_DEFAULTS, "EQX_ON_ERROR": "nan"}
    assert YNN_OFF in XLA_DEFAULTS.split()
    mine = _probe("import bdpd_jax; bdpd_jax.configure()", XLA_FLAGS="--xla_dump_to=/tmp/x", EQX_ON_ERROR="raise")
    assert mine == {"XLA_FLAGS": "--xla_dump_to=/tmp/x", "EQX_ON_ERROR": "raise"}


def test_configure_before_the_first_run_reaches_equinox() -> None:
    """equinox reads EQX_ON_ERROR when imported: configured first, a failed check is NaN."""
    code = (
        "import bdpd_jax; bdpd_jax.configure(); import jax.numpy as jnp, equinox as eqx, math; "
        "warnings.simplefilter('ignore'); assert math.isnan(float(eqx.error_if(jnp.float32(1), True, 'x')))"
    )
    assert _probe(code)["EQX_ON_ERROR"] == "nan"


def test_configure_after_equinox_warns() -> None:
    code = (
        "import equinox, bdpd_jax; seen = []; warnings.simplefilter('always'); "
        "warnings.showwarning = lambda m, c, *a, **k: seen.append(c); bdpd_jax.configure(); "
        "assert seen == [RuntimeWarning], seen"
    )
    assert _probe(code)["EQX_ON_ERROR"] == "nan"


def test_the_cli_configures_the_process() -> None:
    base = {k: v for k, v in os.environ.items() if k not in KEYS}
    code = (
        "import os, sys; sys.argv = ['bdpd', 'version']; from bdpd_jax import cli; "
        "import atexit; atexit.register(lambda: print(os.environ.get('EQX_ON_ERROR'))); cli.main()"
    )
    out = subprocess.run([sys.executable, "-c", code], env=base, capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "nan", out.stdout + out.stderr


# blocks of 2 MiB allocated and freed 4 times over: the page faults that costs (a first
# round touched the memory)
FAULTS = """import json, resource, numpy as np
def rounds():
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(4):
        r = [np.ones(1 << 18) for _ in range(8)]
        del r
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
rounds()
"""


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc")
def test_configure_keeps_freed_memory_for_reuse() -> None:
    """A freed multi-MiB block (a history run's records) is reused without page faults once
    configured; a user's own malloc setting wins (bdpd_jax/_env.py, keep_freed_memory)."""
    code = "import bdpd_jax\nbefore = rounds()\nbdpd_jax.configure()\nrounds()\nprint(json.dumps([before, rounds()]))"
    out = subprocess.run([sys.executable, "-c", FAULTS + code], capture_output=True, text=True, timeout=300, check=True)
    before, after = json.loads(out.stdout.strip().splitlines()[-1])
    if before < 1000:
        pytest.skip(f"this C library keeps freed blocks already ({before} faults)")
    assert after < before // 10, (before, after)
    mine = "from bdpd_jax._env import keep_freed_memory; print(json.dumps([keep_freed_memory(), 0]))"
    out = subprocess.run(
        [sys.executable, "-c", "import json; " + mine],
        env={**os.environ, "MALLOC_TRIM_THRESHOLD_": "1048576"},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, 0]


def test_configure_reports_the_settings_in_force() -> None:
    import bdpd_jax

    got = bdpd_jax.configure()
    assert got == {k: os.environ.get(k, "") for k in KEYS}


@pytest.mark.parametrize("name", ["simulate", "sweep", "ArenaConfig", "Results", "Policy", "lab", "kernels"])
def test_the_lazy_names_resolve(name: str) -> None:
    import bdpd_jax

    assert getattr(bdpd_jax, name) is not None and name in dir(bdpd_jax)


def test_prepare_is_exported_plainly_and_its_modules_importable() -> None:
    import types

    import bdpd_jax
    from bdpd_jax.prepare import prepare
    from bdpd_jax.prepare.game import build

    assert type(bdpd_jax.prepare) is types.ModuleType  # a plain package: no class swapped in
    assert bdpd_jax.prepare.prepare is prepare is bdpd_jax.lab.prepare
    prep = prepare(bdpd_jax.default_config())
    assert isinstance(prep, bdpd_jax.PreparedRun) and callable(build)
    assert bdpd_jax.lab.prepare(bdpd_jax.default_config()) is prep  # the same content: prepared once
    with pytest.raises(AttributeError):
        bdpd_jax.no_such_name  # noqa: B018
