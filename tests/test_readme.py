"""Every code block of the README runs as pasted (issue 40), at a small size: the only edits
are the sizes in SMALL (each must occur, so a changed README fails here rather than running
something else) and the venv's ``.venv/bin/`` (the running interpreter's). The "Run the
platform" blocks are run by tests/host/test_readme_platform.py, the study block by
tests/test_studies.py (the same script at the same size, run as ``python`` runs it, in the
process of tests/study_runner.py that runs every study)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
# text as pasted -> the small size it runs at here (every one must occur in the README)
SMALL = {
    "n_arenas=10_000": "n_arenas=8",  # the size of `bdpd run ... --arenas 1000` below: one program
    "n_arenas=1000": "n_arenas=8",
    "--arenas 1000": "--arenas 8",
    "replicates=200": "replicates=4",
    "population=32": "population=4",
    "generations=20": "generations=2",
    "replicates=32": "replicates=2",
    "replicates = 100": "replicates = 4",
    "population = 32": "population = 4",
    "generations = 20": "generations = 2",
    "replicates = 32": "replicates = 2",
    "n = 256": "n = 8",
}
# At this size the blocks' time is XLA compiling: compile without its optimisation passes (the same
# programs; tests/test_studies.py does the same for the studies and says why)
ENV = {**os.environ, "JAX_DISABLE_MOST_OPTIMIZATIONS": "1"}
COVERED_ELSEWHERE = ("bdpd serve --port 3000", "curl -s http://localhost:3000/api/health", "studies/regen_sweep.py")


def blocks() -> list[tuple[str, str]]:
    return re.findall(r"```(\w+)\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def small(code: str) -> str:
    for big, little in SMALL.items():
        code = code.replace(big, little)
    return code.replace(".venv/bin/", f"{BIN}/")


def test_every_size_edit_applies_and_every_block_is_run_somewhere() -> None:
    text = "".join(code for _, code in blocks())
    assert [k for k in SMALL if k not in text] == []
    kinds = [k for k, _ in blocks()]
    assert set(kinds) <= {"python", "toml", "bash", "json"}, kinds
    elsewhere = [c for k, c in blocks() if k == "bash" and any(m in c for m in COVERED_ELSEWHERE)]
    assert len(elsewhere) == 3


def test_the_operator_file_validates() -> None:
    pytest.importorskip("fastapi")
    from bdpd_jax.host.live.operator import Operator

    (op,) = [json.loads(c) for k, c in blocks() if k == "json"]
    assert Operator.model_validate(op).credentials["openai"].api_key_env == "OPENAI_API_KEY"


@pytest.mark.heavy
def test_the_python_blocks_then_the_shell_blocks_and_specs_run(tmp_path) -> None:
    """One test, in this order (not two that xdist may run side by side): the shell blocks'
    `bdpd run arena.json`, sweep and search specs are the python blocks' configs at the same
    sizes, so they load the programs the python blocks compiled from the run's compilation
    cache (tests/conftest.py) instead of compiling them again."""
    for extra in ("evosax", "pymoo", "jaxmarl"):
        pytest.importorskip(extra)
    (tmp_path / "py").mkdir()
    (tmp_path / "sh").mkdir()
    _run_python_blocks(tmp_path / "py")
    _run_shell_blocks_and_specs(tmp_path / "sh")


def _run_python_blocks(tmp_path: Path) -> None:
    code = "\n".join(small(c) for k, c in blocks() if k == "python")
    p = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=1200, env=ENV
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert (tmp_path / "results" / "summary.parquet").is_file()


def _run_shell_blocks_and_specs(tmp_path: Path) -> None:
    (first,) = [c for k, c in blocks() if k == "bash" and "bdpd config > arena.json" in c]
    p = subprocess.run(
        ["bash", "-ec", small(first)], cwd=tmp_path, capture_output=True, text=True, timeout=900, env=ENV
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "govsim_gain" in p.stdout and "survival rate" in p.stdout, p.stdout[-2000:]
    sweep_spec, search_spec = [small(c) for k, c in blocks() if k == "toml"]
    for name, spec in (("sweep", sweep_spec), ("search", search_spec)):
        (tmp_path / f"{name}.toml").write_text(spec)
        cmd = [str(BIN / "bdpd"), name, f"{name}.toml", "--out", f"{name}1/"]
        p = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900, env=ENV)
        assert p.returncode == 0, p.stderr[-3000:]
        assert ("points: mean +-" if name == "sweep" else "best (generation") in p.stdout, p.stdout[-2000:]
    env = {**ENV, "COLUMNS": "200"}
    p = subprocess.run([str(BIN / "bdpd"), "show", "sweep1/"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert p.returncode == 0 and "model.regenRate" in p.stdout, p.stdout + p.stderr
