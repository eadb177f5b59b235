"""Lint, format and type checks over the repository: each test fails with the tools' findings.

ruff and mypy run through ``sys.executable -m`` so that the venv's versions and pyproject.toml's
settings apply. mypy runs over a tree of links in which kernels/ sits at bdpd_jax/kernels (the
package-dir mapping of pyproject.toml, which mypy cannot follow), so the host's uses of the
kernels are checked too; findings are reported with the repository's paths.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 900


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python -m <args>`` in ``cwd``, output captured."""
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S)


def _report(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}".strip()


def linked_tree(dest: Path) -> Path:
    """``dest/bdpd_jax``: links to every entry of bdpd_jax/ plus ``kernels`` -> kernels/."""
    pkg = dest / "bdpd_jax"
    pkg.mkdir(parents=True, exist_ok=True)
    for entry in (ROOT / "bdpd_jax").iterdir():
        if entry.name != "__pycache__" and not (pkg / entry.name).exists():
            (pkg / entry.name).symlink_to(entry)
    if not (pkg / "kernels").exists():
        (pkg / "kernels").symlink_to(ROOT / "kernels")
    return pkg


def run_mypy(tmp: Path) -> tuple[int, str]:
    """mypy over bdpd_jax and its kernels (the linked tree under ``tmp``): (exit code, findings)."""
    linked_tree(tmp)
    proc = _run(
        "mypy",
        "--config-file",
        str(ROOT / "pyproject.toml"),
        "--cache-dir",
        str(ROOT / ".mypy_cache"),
        "bdpd_jax",
        cwd=tmp,
    )
    out = proc.stdout.replace("bdpd_jax/kernels/", "kernels/")
    return proc.returncode, f"exit {proc.returncode}\n{out}\n{proc.stderr}".strip()


def test_ruff_check_reports_nothing() -> None:
    proc = _run("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert proc.returncode == 0, _report(proc)


def test_ruff_format_check_reports_nothing() -> None:
    proc = _run("ruff", "format", "--check", "--no-cache", ".")
    assert proc.returncode == 0, _report(proc)


def test_mypy_reports_nothing(tmp_path: Path) -> None:
    code, report = run_mypy(tmp_path)
    assert code == 0, report


if __name__ == "__main__":  # `python tests/test_lint.py`: the mypy findings, as the test sees them
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        code, report = run_mypy(Path(d))
    print(report)
    sys.exit(code)
