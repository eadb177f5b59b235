"""Run study notebooks (studies/*.py) one after another in this one process, for
tests/test_studies.py: one interpreter and one jax import for all of them instead of one each
(3-6 CPU s each), and a program two studies share is traced once.

Each study runs as ``python studies/NAME.py`` runs it (``runpy.run_path`` as ``__main__``,
``sys.argv`` its path, its folder first on ``sys.path``) in a fresh namespace, from a folder of
its own, ``OUT/NAME/``, so its figures go to ``OUT/NAME/bdpd_figures/``; its stdout and stderr
go to ``OUT/NAME/stdout.txt`` and ``stderr.txt``, and its warning filters are restored after it.
A study that raises leaves its traceback in ``OUT/NAME/error.txt`` and the next one runs anyway;
``OUT/NAME/done`` marks a study that ran to its end or raised (a missing one: the process died
on it).

Usage: ``python tests/study_runner.py OUT STUDY.py [STUDY.py ...]``
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import traceback
import warnings
from pathlib import Path


def run_study(path: Path, folder: Path) -> None:
    """Run one study from ``folder`` and leave its output there (see the module's docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    # a fresh study_output module: its step() clock starts with the study, as in a process of its own
    sys.modules.pop("bdpd_jax.study_output", None)
    argv, cwd = sys.argv, Path.cwd()
    with (
        open(folder / "stdout.txt", "w") as out,
        open(folder / "stderr.txt", "w") as err,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        warnings.catch_warnings(),
    ):
        sys.argv = [str(path)]
        sys.path.insert(0, str(path.parent))  # as python puts a script's folder first
        os.chdir(folder)
        try:
            runpy.run_path(str(path), run_name="__main__")
        except SystemExit as e:  # a script may end with sys.exit(): non-zero is a failure
            if e.code not in (0, None):
                (folder / "error.txt").write_text(traceback.format_exc())
        except Exception:  # a study's failure is its test's failure, not the other studies'
            (folder / "error.txt").write_text(traceback.format_exc())
        finally:
            sys.argv = argv
            sys.path.remove(str(path.parent))
            os.chdir(cwd)
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
    (folder / "done").touch()


def main(argv: list[str]) -> None:
    """``OUT STUDY.py ...``: every study in the order given."""
    out, *paths = argv
    for p in paths:
        path = Path(p).resolve()
        run_study(path, Path(out).resolve() / path.stem)


if __name__ == "__main__":
    main(sys.argv[1:])
