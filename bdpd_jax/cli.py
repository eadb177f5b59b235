"""The ``bdpd`` command: run a batch of arenas from a config and summarise it; serve the platform."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

import bdpd_jax
from bdpd_jax.config.game import ArenaConfig, default_config
from bdpd_jax.config.governance import without_talk

from ._env import configure, enable_compile_cache

app = typer.Typer(add_completion=False, help="BDPD commons arenas, vectorized in JAX.", pretty_exceptions_enable=False)


def fail(exc: BaseException) -> typer.Exit:
    """Print ``error: <message>`` on stderr (no traceback, no rich markup read from the
    message) and return the exit (code 2, like a usage error) to raise."""
    if isinstance(exc, ValidationError):  # one line per error: where, what, the value
        msg = "\n".join(_pydantic_line(e) for e in exc.errors())
    else:
        msg = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
    Console(stderr=True).print(f"[red]error:[/red] {_escape(msg)}")
    return typer.Exit(2)


def _pydantic_line(err: Mapping[str, Any]) -> str:
    loc = ".".join(str(x) for x in err.get("loc", ()))
    text = err.get("msg", "").removeprefix("Value error, ")
    if not loc:
        return f"config: {text}"
    if re.match(r"^[\w\[\].]+: ", text):  # our own messages start with the field's path
        return text
    got = repr(err.get("input"))
    return f"{loc}: {text} (got {got[:80] + '...' if len(got) > 80 else got})"


def _escape(text: str) -> str:
    return escape(text)


def check_out_dir(out: Path | None) -> None:
    """--out must be a directory (or not exist yet) that can be written: checked before the run."""
    if out is None:
        return
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out: {str(out)!r} exists and is not a directory")
    try:  # created now (the run would create it) so that a bad path fails before the run
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"--out: cannot create {str(out)!r}: {e.strerror or e}") from None
    if not os.access(out, os.W_OK):
        raise ValueError(f"--out: {str(out)!r} is not writable")


def summary_table(results) -> tuple[dict, list[tuple[str, float, float]]]:
    """Survival rate, mean collapse turn and final wealth by strategy, from a Results."""
    s = results.summary
    n = len([c for c in s.columns if c.startswith("wealth_")])
    rows = []
    for strat in sorted({s[f"strategy_{i}"].iloc[0] for i in range(n)}):
        cols = [f"wealth_{i}" for i in range(n) if s[f"strategy_{i}"].iloc[0] == strat]
        vals = s[cols].to_numpy().ravel()
        rows.append((strat, float(vals.mean()), float(vals.std())))
    collapsed = s["collapse_turn"].dropna()
    head = {
        "arenas": len(s),
        "survival_rate": float(s["survived"].mean()),
        "mean_collapse_turn": float(collapsed.mean()) if len(collapsed) else float("nan"),
    }
    return head, rows


@app.command()
def run(
    config: Path | None = typer.Argument(None, help="Arena config JSON (default: the shipped logistic example)"),
    arenas: int = typer.Option(4096, "--arenas", "-n", help="Number of arenas"),
    seed: int = typer.Option(0, "--seed", help="Seed of the run"),
    out: Path | None = typer.Option(None, "--out", help="Directory for parquet results"),
    turns: int | None = typer.Option(None, "--turns", help="Turns to play (default: model.maxTurns)"),
    history: bool = typer.Option(True, "--history/--no-history", help="Keep per-turn frames"),
    generator: str = typer.Option("hash", "--generator", help="hash | threefry"),
    no_talk: bool = typer.Option(False, "--no-talk", help="Cheap talk off: drop every player's scripted talk (003_*)"),
) -> None:
    """Run a batch of arenas, print a summary table and optionally write parquet."""
    enable_compile_cache()
    console = Console()
    try:
        check_out_dir(out)
        if config is not None and config.is_dir():
            raise ValueError(f"config: {str(config)!r} is a directory, not a JSON file")
        cfg = default_config() if config is None else ArenaConfig.load(config)
        if no_talk:
            cfg = without_talk(cfg)
        t0 = time.perf_counter()
        res = bdpd_jax.simulate(cfg, n_arenas=arenas, seed=seed, history=history, turns=turns, generator=generator)
    except (ValueError, OSError) as e:
        raise fail(e) from e
    wall = time.perf_counter() - t0
    head, rows = summary_table(res)
    console.print(
        f"{head['arenas']} arenas of {_escape(repr(cfg.model.name))} ({cfg.model.engine_mode}), seed {seed}, "
        f"{res.meta['turns']} turns in {wall:.2f} s (compile included)"
    )
    console.print(
        f"survival rate [bold]{head['survival_rate']:.3f}[/bold]   mean collapse turn "
        f"[bold]{head['mean_collapse_turn']:.2f}[/bold]"
    )
    table = Table(title="final wealth by strategy")
    table.add_column("strategy")
    table.add_column("mean", justify="right")
    table.add_column("std", justify="right")
    for strat, mean, std in rows:
        table.add_row(strat, f"{mean:.3f}", f"{std:.3f}")
    console.print(table)
    if out is not None:
        try:
            res.to_parquet(out)
        except (ValueError, OSError) as e:
            raise fail(ValueError(f"--out: could not write {str(out)!r}: {e}")) from e
        console.print(f"wrote {out}/")


def _example_help(text: str, example: str) -> str:
    r"""A command's help with an example spec, kept verbatim (typer's ``\b`` paragraph)."""
    return text + "\n\nExample spec:\n\n\b\n" + _escape(example)


def _sweep_help() -> str:
    from bdpd_jax.sweeps.sweep_file import EXAMPLE

    return _example_help("Run a parameter sweep chunk by chunk into --out (re-running resumes).", EXAMPLE)


def _search_help() -> str:
    from bdpd_jax.searches.spec import EXAMPLE

    return _example_help(
        "Search config paths for the rules that meet a goal (bdpd_jax.search): each generation one batched "
        "sweep; a progress bar of generations and the best so far; re-running with the same spec resumes.",
        EXAMPLE,
    )


@app.command(help=_sweep_help())
def sweep(
    spec: Path = typer.Argument(..., help="Sweep spec (TOML): config, grid/samples/points, replicates, seed"),
    out: Path = typer.Option(..., "--out", help="Directory for the parquet parts (re-running resumes)"),
    scheduler: str | None = typer.Option(None, "--scheduler", help="Dask scheduler address (tcp://host:8786)"),
    devices: int | None = typer.Option(None, "--devices", help="Local devices to shard over (default: all)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a different sweep already in --out"),
) -> None:
    from rich.console import Console

    from bdpd_jax.sweeps.sweep_file import load_sweep_file, run_sweep_file

    enable_compile_cache()
    console = Console()
    try:
        sp = load_sweep_file(spec)
        t0 = time.perf_counter()
        r = run_sweep_file(sp, out, progress=True, devices=devices, client=scheduler, overwrite=overwrite)
    except (ValueError, OSError) as e:
        raise fail(e) from e
    console.print(
        f"{len(sp.table)} points x {sp.replicates} replicates in {r.n_chunks} chunk(s): computed {len(r.computed)}, "
        f"already written {len(r.skipped)}, {time.perf_counter() - t0:.2f} s; wrote {out}/"
    )


@app.command(help=_search_help())
def search(
    spec: Path = typer.Argument(..., help="Search spec (TOML): config, space, objective, constraints, method, ..."),
    out: Path = typer.Option(..., "--out", help="Directory for the generations and results (re-running resumes)"),
) -> None:
    from rich.console import Console

    from bdpd_jax.searches import search as run_search
    from bdpd_jax.searches.spec import load_search_spec

    enable_compile_cache()
    console = Console()
    try:
        check_out_dir(out)
        sp = load_search_spec(spec)
        t0 = time.perf_counter()
        res = run_search(sp.config, out=out, progress=True, **sp.kwargs)
    except (ValueError, OSError) as e:
        raise fail(e) from None
    best = res.best
    m = best["metrics"]
    shown = {c: m[c] for c in m if c.endswith("_mean") or c in ("feasible", "violation")}
    console.print(
        f"{len(res.history)} candidates in {res.history['generation'].nunique()} generations, "
        f"{time.perf_counter() - t0:.2f} s; wrote {out}/"
    )
    console.print(f"best (generation {best['generation']}): {_escape(repr(best['point']))}")
    console.print(_escape(", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items())))


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on"),
    port: int = typer.Option(3000, "--port", help="TCP port (the seed's 3000)"),
    arenas: Path = typer.Option(Path("arenas"), "--arenas", help="Folder of the arenas (meta.json, turns.jsonl, ...)"),
    cors: list[str] | None = typer.Option(None, "--cors", help="Allowed CORS origin (repeat; '*' for any)"),
    no_talk: bool = typer.Option(False, "--no-talk", help="New arenas default to noTalk (harvest only)"),
    workers: int = typer.Option(2, "--workers", help="Kernel-bound arena ticks running at once"),
    switch_ms: float = typer.Option(1.0, "--switch-ms", help="Python's thread switch interval (ms)"),
    group_ticks: bool = typer.Option(
        True, "--group-ticks/--no-group-ticks", help="Tick auto arenas sharing a compiled game and interval together"
    ),
    operator: Path | None = typer.Option(
        None, "--operator", help="JSON file of LLM credentials and allowed endpoints (operator only)"
    ),
) -> None:
    """Serve the HTTP API (004_* A.2) and the dashboard at http://HOST:PORT/."""
    console = Console()
    try:
        import uvicorn  # optional dependency: the host extra

        from bdpd_jax.host.server import create_app  # optional dependency: FastAPI, the host extra
    except ImportError as e:
        console.print(f"[red]error:[/red] the server needs the host extra: pip install -e '.[host]' ({e})")
        raise typer.Exit(2) from e
    if not 0 < port < 65536:
        console.print(f"[red]error:[/red] --port: must be in 1..65535, got {port}")
        raise typer.Exit(2)
    if not 0.05 <= switch_ms <= 100:
        console.print(f"[red]error:[/red] --switch-ms: must be in [0.05, 100], got {switch_ms}")
        raise typer.Exit(2)
    if workers < 1:
        console.print(f"[red]error:[/red] --workers: must be >= 1, got {workers}")
        raise typer.Exit(2)
    try:
        from bdpd_jax.host.operator import Operator  # optional dependency: the host extra (aiohttp, jsbox)

        op = Operator.load(operator) if operator is not None else None
    except ValueError as e:
        console.print(f"[red]error:[/red] --operator: {e}")
        raise typer.Exit(2) from None
    import sys

    if arenas.exists() and not arenas.is_dir():
        console.print(f"[red]error:[/red] --arenas: {str(arenas)!r} is not a folder")
        raise typer.Exit(2)
    sys.setswitchinterval(switch_ms / 1000.0)
    enable_compile_cache()
    try:
        app_ = create_app(arenas, op, cors=tuple(cors or ()), no_talk=no_talk, workers=workers, group_ticks=group_ticks)
    except (OSError, ValueError) as e:  # an arenas folder that cannot be made or read: one line, exit 2
        console.print(f"[red]error:[/red] --arenas: {type(e).__name__}: {e}")
        raise typer.Exit(2) from None
    console.print(f"bdpd serve: http://{host}:{port}/  (arenas in {arenas}/, API docs at /docs)")
    uvicorn.run(app_, host=host, port=port, log_level="warning")


@app.command()
def version() -> None:
    """Print the package version."""
    typer.echo(bdpd_jax.__version__)


def main() -> None:
    configure()  # the package's process settings, before any command imports jax or equinox
    app()


if __name__ == "__main__":
    main()
