"""Every study notebook (jupytext .py) runs end to end at a small size and saves its figure
(``BDPD_HEAVY=1``: at the notebook's own full size; ``BDPD_STUDY_SIZE`` sets a size of one's own).

At the small size a study's time is almost all XLA compiling its programs, so it runs with
``JAX_DISABLE_MOST_OPTIMIZATIONS=1``: the same programs, compiled without XLA's optimisation
passes (learned_players, then six PPO programs: 81 -> 45 s; now its tables, seeds and
built-in baselines are one program: 56 -> 22 CPU s). A study's checks hold either way; the
full-size run keeps XLA's defaults."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from payloads import HEAVY

# operator scripts that need a real model endpoint; their arguments are tested on their own
# (tests/host/test_govsim_llm_script.py)
OPERATOR_SCRIPTS = {"govsim_llm"}
STUDIES = sorted(
    p for p in (Path(__file__).resolve().parents[1] / "studies").glob("*.py") if p.stem not in OPERATOR_SCRIPTS
)


@pytest.mark.heavy
@pytest.mark.parametrize("path", STUDIES, ids=[p.stem for p in STUDIES])
def test_study_runs_small(path, tmp_path):
    """Run from a folder of its own without BDPD_FIGURES_DIR: the figure goes to bdpd_figures/
    there (never into the tracked tree), and the study says where it went."""
    env = {k: v for k, v in os.environ.items() if k != "BDPD_FIGURES_DIR"} | {"MPLBACKEND": "Agg"}
    if not HEAVY:
        env.setdefault("BDPD_STUDY_SIZE", "16")
        env.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
    p = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        timeout=3600 if HEAVY else 600,
        env=env,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip(), "a study ends with a printed conclusion"
    figures = list((tmp_path / "bdpd_figures").glob("*.png"))
    assert figures, "a study ends with a figure"
    assert all(f"figure: {f.resolve()}" in p.stdout for f in figures), p.stdout[-2000:]
    assert re.search(r"^\[ *[\d.]+ s\] ", p.stdout, re.M), "a study says what it does as it goes"
