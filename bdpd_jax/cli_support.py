"""Pieces of the ``bdpd`` command that are not commands: help with examples printed verbatim,
the ``--out`` check, and the summaries a run, a sweep and a search print.

Nothing here imports JAX: ``bdpd --help`` and every command's ``--help`` stay fast, and the
process settings (``bdpd_jax.configure()``) come before the first heavy import.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import typer.core
from rich.console import Console
from rich.markup import escape
from rich.table import Table


def example_file(name: str) -> str:
    """A shipped example (``bdpd_jax/data/<name>``): the sweep and search specs."""
    return resources.files("bdpd_jax").joinpath("data", name).read_text()


class ExampleCommand(typer.core.TyperCommand):
    """A command whose help ends with examples printed as they are (rich would wrap them at
    the terminal's width and a pasted line would break): ``examples`` is set per command."""

    examples: str = ""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        super().format_help(ctx, formatter)
        if self.examples:
            formatter.write(self.examples.rstrip("\n") + "\n")


class OneLineErrors(typer.core.TyperGroup):
    """The ``bdpd`` group: a usage error (an unknown option, a value of the wrong type) is one
    line on stderr and exit 2 like every other expected failure, not a boxed panel."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        def call() -> Any:
            return super(OneLineErrors, self).main(
                args, prog_name, complete_var, standalone_mode=False, windows_expand_args=windows_expand_args, **extra
            )

        if not standalone_mode:
            return call()
        try:
            rv = call()
        except typer.TyperException as e:
            text = e.format_message() if hasattr(e, "format_message") else str(e)
            Console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {escape(' '.join(text.split()))}")
            raise SystemExit(getattr(e, "exit_code", 2)) from None
        except typer.Abort:
            Console(stderr=True).print("[red]error:[/red] interrupted")
            raise SystemExit(2) from None
        raise SystemExit(rv if isinstance(rv, int) else 0)


def with_examples(examples: str) -> type[ExampleCommand]:
    """A command class printing ``examples`` verbatim at the end of its help."""
    return type("Examples", (ExampleCommand,), {"examples": examples})


def check_out_dir(out: Path | None, overwrite: bool | None = None) -> None:
    """--out must be a folder (or not exist yet) that can be written: checked before the run,
    leaving nothing (a folder it had to make to know is removed again). ``overwrite`` False:
    a folder that holds files is refused (None: not checked)."""
    if out is None:
        return
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out: {str(out)!r} exists and is not a folder")
    if overwrite is False and out.is_dir() and any(out.iterdir()):
        raise ValueError(f"--out: {str(out)!r} is not empty; pass --overwrite to replace what is in it")
    if out.is_dir():
        if not os.access(out, os.W_OK | os.X_OK):
            raise ValueError(f"--out: {str(out)!r} is not writable")
        return
    top = out  # the first folder of the path that does not exist yet: made now and removed again
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    try:
        out.mkdir(parents=True)
    except OSError as e:
        raise ValueError(f"--out: cannot create {str(out)!r}: {e.strerror or e}") from None
    shutil.rmtree(top, ignore_errors=True)


def clear_results(out: Path) -> None:
    """Remove a run's results from ``out`` before another run's are written (``--overwrite``):
    its parquet files and part folders and ``meta.json``; anything else there is kept."""
    if not out.is_dir():
        return
    for p in [*out.glob("*.parquet"), out / "meta.json"]:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def engine_of(meta: dict[str, Any]) -> str | None:
    """The engine of a run from its meta (``config.model.engineMode``), None when unknown."""
    model = (meta.get("config") or {}).get("model") if isinstance(meta.get("config"), dict) else None
    return model.get("engineMode") if isinstance(model, dict) else None


def metric_family(meta: dict[str, Any]) -> tuple[str, ...]:
    """The outcome columns the run's engine leads with (``Engine.metric_family``; empty for
    the project's own family or an unknown engine): as the run recorded it in its meta
    (``metric_family``, so reading a folder starts no jax), else asked of the engine."""
    recorded = meta.get("metric_family")
    if isinstance(recorded, list) and all(isinstance(c, str) for c in recorded):
        return tuple(recorded)
    engine = engine_of(meta)
    if engine is None:
        return ()
    from bdpd_jax.kernels.engines.base import get_engine

    try:
        return tuple(get_engine(engine).metric_family)
    except (KeyError, ValueError):
        return ()


def summary_lines(summary: Any, meta: dict[str, Any]) -> list[str]:
    """The outcome line(s) of a batch summary frame, in the metric family of its engine (its
    ``metric_family``, e.g. GovSim's metrics), else survival and collapse."""
    s = summary
    family = [c for c in metric_family(meta) if c in s.columns]
    if family:
        return ["metrics (mean over arenas): " + ", ".join(f"{c} {_fmt(float(s[c].mean()))}" for c in family)]
    collapsed = s["collapse_turn"].dropna()
    when = f"mean collapse turn {float(collapsed.mean()):.2f}" if len(collapsed) else "no arena collapsed"
    return [f"survival rate {float(s['survived'].mean()):.3f} ({len(collapsed)} of {len(s)} collapsed; {when})"]


def wealth_table(summary: Any) -> Table:
    """Final wealth by strategy (mean and sd over the players of that strategy)."""
    s = summary
    n = len([c for c in s.columns if c.startswith("wealth_")])
    table = Table(title="final wealth by strategy")
    for col, just in (("strategy", "left"), ("mean", "right"), ("std", "right")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for strat in sorted({str(s[f"strategy_{i}"].iloc[0]) for i in range(n)}):
        cols = [f"wealth_{i}" for i in range(n) if str(s[f"strategy_{i}"].iloc[0]) == strat]
        vals = s[cols].to_numpy(dtype=float).ravel()
        table.add_row(escape(strat), f"{vals.mean():.3f}", f"{vals.std():.3f}")
    return table


def print_summary(console: Console, summary: Any, meta: dict[str, Any]) -> None:
    """A batch's outcome lines and its wealth table."""
    for line in summary_lines(summary, meta):
        console.print(escape(line))
    if len(summary):
        console.print(wealth_table(summary))


def points_table(points: Any, names: list[str], meta: dict[str, Any], limit: int = 40) -> Table:
    """A sweep's points: the swept values and the outcomes of the engine's metric family (from
    the sweep's ``meta``), each as its mean +- the half-width of its 95 % interval (outcomes
    with no value left out)."""
    wanted = metric_family(meta) or ("survived", "collapse_turn", "wealth_mean", "efficiency")
    shown = [o for o in wanted if f"{o}_mean" in points.columns and points[f"{o}_mean"].notna().any()]
    table = Table(title=f"{len(points)} points: mean +- half-width of the 95 % interval")
    for name in [*names, *shown]:
        table.add_column(escape(name), justify="right", overflow="fold")
    for _, row in points.head(limit).iterrows():
        cells = [_fmt(row[n]) for n in names]
        cells += [f"{_fmt(row[o + '_mean'])} +- {_fmt((row[o + '_ci_high'] - row[o + '_ci_low']) / 2)}" for o in shown]
        table.add_row(*[escape(c) for c in cells])
    if len(points) > limit:
        table.caption = f"first {limit} of {len(points)} points"
    return table
