"""Where a study's figure goes, and what it prints on the way (studies/*.py).

A study run by a user must not touch the tracked tree: by default its figure goes to
``bdpd_figures/`` in the current folder (ignored by git); ``BDPD_FIGURES_DIR`` names another
folder (``studies/figures`` regenerates the committed figures, deliberately). Every step
that takes long says so as it starts (:func:`step`), and the figure's path is printed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

#: the default folder of the figures, relative to the current folder
DEFAULT_DIR = "bdpd_figures"
_T0 = time.perf_counter()


def figures_dir() -> Path:
    """``BDPD_FIGURES_DIR`` or ``bdpd_figures/`` (created)."""
    out = Path(os.environ.get("BDPD_FIGURES_DIR") or DEFAULT_DIR)
    out.mkdir(parents=True, exist_ok=True)
    return out


def study_size(default: int) -> int:
    """``BDPD_STUDY_SIZE`` (an integer >= 1) or the study's own full size."""
    raw = os.environ.get("BDPD_STUDY_SIZE")
    if raw is None:
        return default
    try:
        size = int(raw)
    except ValueError:
        raise ValueError(f"BDPD_STUDY_SIZE: must be an integer, got {raw!r}") from None
    if size < 1:
        raise ValueError(f"BDPD_STUDY_SIZE: must be >= 1, got {size}")
    return size


def step(message: str) -> None:
    """Say what the study does next, with the seconds since it started (flushed at once)."""
    print(f"[{time.perf_counter() - _T0:6.1f} s] {message}", flush=True)


def save_figure(fig: Any, name: str, **kwargs: Any) -> Path:
    """Save a matplotlib figure as ``name`` in :func:`figures_dir` and print where it went."""
    path = figures_dir() / name
    fig.savefig(path, **kwargs)
    print(f"figure: {path.resolve()}", flush=True)
    return path


__all__ = ["DEFAULT_DIR", "figures_dir", "save_figure", "step", "study_size"]
