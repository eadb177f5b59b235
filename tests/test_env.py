"""Importing bdpd_jax sets its process settings only where the user has not (README)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = "import os, json, bdpd_jax; print(json.dumps({k: os.environ.get(k) for k in ('XLA_FLAGS', 'EQX_ON_ERROR')}))"


def _import_env(**env: str | None) -> dict[str, str | None]:
    base = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "EQX_ON_ERROR")}
    base.update({k: v for k, v in env.items() if v is not None})
    out = subprocess.run([sys.executable, "-c", PROBE], env=base, capture_output=True, text=True, timeout=120,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_sets_only_what_is_unset() -> None:
    from bdpd_jax._env import XLA_DEFAULTS, YNN_OFF

    assert _import_env() == {"XLA_FLAGS": XLA_DEFAULTS, "EQX_ON_ERROR": "nan"}
    assert YNN_OFF in XLA_DEFAULTS.split()
    mine = _import_env(XLA_FLAGS="--xla_dump_to=/tmp/x", EQX_ON_ERROR="raise")
    assert mine == {"XLA_FLAGS": "--xla_dump_to=/tmp/x", "EQX_ON_ERROR": "raise"}


def test_configure_reports_the_settings_in_force() -> None:
    import bdpd_jax

    got = bdpd_jax.configure()
    assert got == {k: os.environ.get(k, "") for k in ("XLA_FLAGS", "EQX_ON_ERROR")}
