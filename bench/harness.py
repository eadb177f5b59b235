"""What every bench script shares: its command line (``--json PATH``), the process settings,
timing (``block_until_ready``, compile time apart, interleaved best-of) and the JSON-lines
writer of its figures.

A bench script starts with::

    from harness import Figures, best_of, parser, setup   # bench/ is on a bench script's path

    setup()                      # bdpd_jax.configure(compile_cache=True) before jax runs anything
    ap = parser(__doc__, arenas=16384)   # argparse with --json PATH and --arenas N
    args = ap.parse_args()
    out = Figures("throughput", args.json)
    out.emit("kernel", b=16384, t=30, run_s=0.012, arena_turns_per_s=4.1e7)

Each ``emit`` appends one JSON object to ``--json PATH`` (one line: the bench, the case,
the machine, the time, then the figures), so runs on several machines or days concatenate
into one file that pandas reads with ``pd.read_json(path, lines=True)``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def setup(*, compile_cache: bool = True) -> dict[str, str]:
    """The package's process settings (``bdpd_jax.configure``), before jax runs anything;
    the repository root first on the path (a bench runs from a checkout)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import bdpd_jax

    return bdpd_jax.configure(compile_cache=compile_cache)


def parser(doc: str | None = None, **sizes: int) -> argparse.ArgumentParser:
    """An argument parser described by the script's docstring, with ``--json PATH`` and an
    integer flag per ``sizes`` entry (its default): ``parser(__doc__, arenas=100, max_turns=30)``
    takes ``--arenas N`` and ``--max-turns N`` (the bench's sizes, declared as one table)."""
    first = (doc or "").strip().splitlines()[0] if doc else None
    ap = argparse.ArgumentParser(description=first)
    ap.add_argument(
        "--json",
        type=Path,
        default=None,
        metavar="PATH",
        help="append the figures to PATH as JSON lines (one object per case)",
    )
    for name, default in sizes.items():
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=default, metavar="N")
    return ap


def block(x: Any) -> Any:
    """``jax.block_until_ready`` of anything (non-arrays pass through)."""
    import jax

    return jax.block_until_ready(x)


def seconds(fn: Callable[[], Any]) -> float:
    """Wall seconds of one call, its device work waited for."""
    t0 = time.perf_counter()
    block(fn())
    return time.perf_counter() - t0


def compile_seconds(jitted: Any, *args: Any) -> tuple[float, Any]:
    """(seconds to lower and compile ``jitted`` for ``args``, the compiled executable): the
    compile time apart from any run."""
    t0 = time.perf_counter()
    exe = jitted.lower(*args).compile()
    return time.perf_counter() - t0, exe


def best_of(calls: dict[str, Callable[[], Any]], reps: int) -> dict[str, float]:
    """Best seconds of each call, the calls interleaved rep by rep (each sees the same
    machine load: other jobs may share the machine)."""
    best = {k: math.inf for k in calls}
    for _ in range(int(reps)):
        for k, f in calls.items():
            best[k] = min(best[k], seconds(f))
    return best


def interleaved(calls: dict[str, Callable[[], Any]], reps: int) -> dict[str, dict[str, list[float]]]:
    """Every rep's wall and process CPU seconds of each call (``{name: {"wall": [...],
    "cpu": [...]}}``), the calls interleaved rep by rep: on a shared machine the spread over
    many short reps says more than one best time, and rep i's figures of two calls saw the
    same load (their ratio is paired)."""
    out: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in calls}
    for _ in range(int(reps)):
        for k, f in calls.items():
            c0, t0 = time.process_time(), time.perf_counter()
            block(f())
            out[k]["wall"].append(time.perf_counter() - t0)
            out[k]["cpu"].append(time.process_time() - c0)
    return out


def spread(xs: list[float]) -> dict[str, float]:
    """Median, quartiles, min and max of a list of figures."""
    import numpy as np

    q = np.percentile(np.asarray(xs, float), [0, 25, 50, 75, 100])
    return dict(zip(("min", "q1", "median", "q3", "max"), (float(v) for v in q), strict=True))


def machine() -> dict[str, Any]:
    """Where the figures were taken: jax's version and backend, CPUs, XLA_FLAGS."""
    import jax

    dev = jax.devices()[0]
    return {
        "jax": jax.__version__,
        "platform": dev.platform,
        "device": getattr(dev, "device_kind", str(dev)),
        "cpus": os.cpu_count(),
        "host": platform.node(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


class Figures:
    """The JSON-lines writer of one bench run (nothing is written without a path)."""

    def __init__(self, bench: str, path: Path | str | None) -> None:
        self.bench = bench
        self.path = Path(path) if path is not None else None
        self.rows: list[dict[str, Any]] = []
        self._machine: dict[str, Any] | None = None

    def emit(self, case: str, **figures: Any) -> dict[str, Any]:
        """Record one case's figures (appended to the file at once: a crash keeps the rest)."""
        if self._machine is None:
            self._machine = machine()
        at = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        row = {
            "bench": self.bench,
            "case": case,
            "at": at,
            **self._machine,
            **{k: _plain(v) for k, v in figures.items()},
        }
        self.rows.append(row)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as f:
                f.write(json.dumps(row) + "\n")
        return row


def _plain(v: Any) -> Any:
    """numpy scalars and arrays as JSON values; NaN and infinities as null."""
    if hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return v
