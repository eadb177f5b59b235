"""Every study notebook (jupytext .py) runs end to end at a small size and saves its figure
(``BDPD_HEAVY=1``: at the notebook's own full size; ``BDPD_STUDY_SIZE`` sets a size of one's own).

At the small size a study's time is almost all XLA compiling its programs, so it runs with
``JAX_DISABLE_MOST_OPTIMIZATIONS=1``: the same programs, compiled without XLA's optimisation
passes (learned_players, then six PPO programs: 81 -> 45 s; now its tables, seeds and
built-in baselines are one program: 56 -> 22 CPU s). A study's checks hold either way; the
full-size run keeps XLA's defaults.

The studies run one after another in ONE subprocess (tests/study_runner.py: each as
``python studies/NAME.py`` runs it, in a fresh namespace and a folder of its own): one
interpreter and jax import instead of nine, 3-6 CPU s each. Each study keeps its own test
and its own checks below."""

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
RUNNER = Path(__file__).with_name("study_runner.py")


@pytest.fixture(scope="module")
def study_runs(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """Every study, run by the runner without BDPD_FIGURES_DIR: a figure goes to bdpd_figures/ in
    the study's own folder (never into the tracked tree), and the study says where it went."""
    out = tmp_path_factory.mktemp("studies")
    env = {k: v for k, v in os.environ.items() if k != "BDPD_FIGURES_DIR"} | {"MPLBACKEND": "Agg"}
    if not HEAVY:
        env.setdefault("BDPD_STUDY_SIZE", "16")
        env.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
    p = subprocess.run(
        [sys.executable, str(RUNNER), str(out), *map(str, STUDIES)],
        capture_output=True,
        text=True,
        timeout=len(STUDIES) * (3600 if HEAVY else 600),
        env=env,
        cwd=out,
    )
    return out, p


@pytest.mark.heavy
@pytest.mark.parametrize("path", STUDIES, ids=[p.stem for p in STUDIES])
def test_study_runs_small(path, study_runs):
    out, p = study_runs
    folder = out / path.stem
    assert (folder / "done").is_file(), f"the runner died on or before {path.stem}: {p.stderr[-3000:]}"
    stdout, stderr = (folder / "stdout.txt").read_text(), (folder / "stderr.txt").read_text()
    assert not (folder / "error.txt").is_file(), (folder / "error.txt").read_text()[-3000:] + stderr[-2000:]
    assert stdout.strip(), "a study ends with a printed conclusion"
    figures = list((folder / "bdpd_figures").glob("*.png"))
    assert figures, "a study ends with a figure"
    assert all(f"figure: {f.resolve()}" in stdout for f in figures), stdout[-2000:]
    assert re.search(r"^\[ *[\d.]+ s\] ", stdout, re.M), "a study says what it does as it goes"


def test_runner_reports_a_failing_study_and_runs_the_next(tmp_path):
    """A study that raises leaves its traceback and does not stop the studies after it."""
    bad, good = tmp_path / "bad.py", tmp_path / "good.py"
    bad.write_text("print('before')\nraise RuntimeError('study broke')\n")
    good.write_text("import pathlib, sys\nprint(sys.argv[0], pathlib.Path.cwd().name)\n")
    p = subprocess.run([sys.executable, str(RUNNER), str(tmp_path / "out"), str(bad), str(good)], timeout=60)
    assert p.returncode == 0
    assert "RuntimeError: study broke" in (tmp_path / "out" / "bad" / "error.txt").read_text()
    assert (tmp_path / "out" / "bad" / "stdout.txt").read_text() == "before\n"
    assert not (tmp_path / "out" / "good" / "error.txt").exists()
    assert (tmp_path / "out" / "good" / "stdout.txt").read_text() == f"{good} good\n"
