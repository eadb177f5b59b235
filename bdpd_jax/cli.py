"""The ``bdpd`` command: run a batch of arenas, a sweep or a search; show a result folder;
print a config to start from; serve the platform.

This module imports nothing heavy: :func:`main` applies the process settings
(``bdpd_jax.configure()``) before any command imports JAX, and ``--help`` never imports it.
Every expected failure is one line and exit 2 (:mod:`bdpd_jax.cli_errors`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

import bdpd_jax

from ._env import configure, enable_compile_cache
from .cli_errors import did_you_mean, guarded
from .cli_support import (
    OneLineErrors,
    check_out_dir,
    clear_results,
    example_file,
    points_table,
    print_summary,
    with_examples,
)

app = typer.Typer(
    cls=OneLineErrors,
    add_completion=False,
    help="BDPD commons arenas, vectorized in JAX.",
    pretty_exceptions_enable=False,
)

#: simulate's argument -> the flag that sets it (an error about the argument names the flag)
RUN_FLAGS = {"n_arenas": "--arenas", "seed": "--seed", "turns": "--turns", "generator": "--generator"}
GENERATORS = ("hash", "threefry")

RUN_EXAMPLES = """
Examples:
  bdpd run
  bdpd run --scenario govsim:fishery/default --arenas 1000
  bdpd config > arena.json
  bdpd run arena.json --arenas 4096 --seed 0 --out results/
  bdpd show results/
"""


def scenario_names() -> list[str]:
    """Every ``--scenario`` a run accepts: ``govsim:<scenario>/<experiment>``."""
    from .scenarios import EXPERIMENTS, GOVSIM_SCENARIOS

    return [f"govsim:{s}/{e}" for s in GOVSIM_SCENARIOS for e in EXPERIMENTS]


def scenario_config(name: str) -> dict[str, Any]:
    """The config of a named scenario (``govsim:fishery/default``), as a plain dict."""
    from .scenarios import govsim

    known = scenario_names()
    if name not in known:
        raise ValueError(
            f"--scenario: unknown scenario {name!r}{did_you_mean(name, known)} (known: {', '.join(known)})"
        )
    scenario, experiment = name.removeprefix("govsim:").split("/")
    return govsim(scenario, experiment)


def starting_config(name: str | None) -> dict[str, Any]:
    """The shipped default config (the seed's logistic payload, 2 conservative + 2 aggressive)
    or a named scenario's, as the JSON a user writes."""
    if name is not None:
        return scenario_config(name)
    return dict(json.loads(example_file("default.json")))


@app.command(cls=with_examples(RUN_EXAMPLES))
@guarded(RUN_FLAGS)
def run(
    config: Path | None = typer.Argument(None, help="Arena config JSON (default: the shipped logistic example)"),
    scenario: str | None = typer.Option(
        None,
        "--scenario",
        help="A ready-made config instead of a file: govsim:<fishery|pasture|pollution>/<experiment>",
    ),
    arenas: int = typer.Option(4096, "--arenas", "-n", help="Number of arenas"),
    seed: int = typer.Option(0, "--seed", help="Seed of the run (the same seed gives the same numbers)"),
    out: Path | None = typer.Option(None, "--out", help="Folder for parquet results (must be empty or new)"),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace the results already in --out (other files are kept)"
    ),
    turns: int | None = typer.Option(None, "--turns", help="Turns to play (default: model.maxTurns)"),
    history: bool = typer.Option(True, "--history/--no-history", help="Keep per-turn frames"),
    generator: str = typer.Option(
        "hash",
        "--generator",
        help="Random number generator: hash (default; fast, an arena's draws depend only on the seed and "
        "its index) or threefry (jax.random, ~5x slower on CPU)",
    ),
    no_talk: bool = typer.Option(False, "--no-talk", help="Cheap talk off: drop every player's scripted talk"),
) -> None:
    """Run a batch of arenas, print a summary table and optionally write parquet."""
    if config is not None and scenario is not None:
        raise ValueError("--scenario: give a config file or --scenario, not both")
    if arenas < 1:
        raise ValueError(f"--arenas: must be >= 1, got {arenas}")
    if generator not in GENERATORS:
        raise ValueError(
            f"--generator: must be hash or threefry, got {generator!r}{did_you_mean(generator, GENERATORS)}"
        )
    check_out_dir(out, overwrite)
    if config is not None and config.is_dir():
        raise ValueError(f"config: {str(config)!r} is a directory, not a JSON file")
    enable_compile_cache()
    from .config.game import ArenaConfig
    from .config.governance import without_talk

    cfg = ArenaConfig.load(config if config is not None else starting_config(scenario))
    if no_talk:
        cfg = without_talk(cfg)
    console = Console()
    t0 = time.perf_counter()
    res = bdpd_jax.simulate(cfg, n_arenas=arenas, seed=seed, history=history, turns=turns, generator=generator)
    wall = time.perf_counter() - t0
    console.print(
        escape(
            f"{len(res.summary)} arenas of {cfg.model.name!r} ({cfg.model.engine_mode}), seed {seed}, "
            f"{res.meta['turns']} turns in {wall:.2f} s (compile included)"
        )
    )
    print_summary(console, res.summary, res.meta)
    if out is not None:
        if overwrite:
            clear_results(out)
        try:
            res.to_parquet(out)
        except OSError as e:
            raise ValueError(f"--out: could not write {str(out)!r}: {e.strerror or e}") from None
        console.print(escape(f"wrote {out}/ (read it back: bdpd show {out}, or bdpd_jax.load({str(out)!r}))"))


@app.command(
    name="config",
    cls=with_examples(
        "\nExamples:\n  bdpd config > arena.json\n  bdpd config --scenario govsim:pasture/universalization\n"
    ),
)
@guarded()
def config_cmd(
    scenario: str | None = typer.Option(None, "--scenario", help="A ready-made config: govsim:<scenario>/<experiment>"),
    full: bool = typer.Option(False, "--full", help="Every field with its default, as validated"),
) -> None:
    """Print a config as JSON to start from: the default one (or a scenario's)."""
    cfg = starting_config(scenario)
    if full:
        from .config.game import ArenaConfig

        cfg = ArenaConfig.load(cfg).model_dump(mode="json", by_alias=True)
    typer.echo(json.dumps(cfg, indent=2))


@app.command(cls=with_examples("\nExamples:\n  bdpd show results/\n  bdpd show arenas/<arenaId>/\n"))
@guarded()
def show(path: Path = typer.Argument(..., help="A folder written by bdpd run, sweep, search or a live arena")) -> None:
    """Print the summary of a result folder (what bdpd_jax.load(PATH) reads)."""
    from .loader import load

    got = load(path)
    console = Console()
    kind = type(got).__name__
    console.print(escape(f"{path}: {kind}"))
    if kind == "SweepResults":
        console.print(points_table(got.points, list(got.names), got.meta))
    elif kind == "SearchResults":
        best = got.best
        console.print(
            escape(f"{len(got.history)} candidates; best (generation {best['generation']}): {best['point']!r}")
        )
    else:
        print_summary(console, got.summary, got.meta)


def _spec_examples(name: str, command: str) -> str:
    return f"\nExample spec:\n\n{example_file(name)}\n  {command}\n"


@app.command(cls=with_examples(_spec_examples("sweep_example.toml", "bdpd sweep spec.toml --out sweep1/")))
@guarded()
def sweep(
    spec: Path = typer.Argument(..., help="Sweep spec (TOML): config, grid/samples/points, replicates, seed"),
    out: Path = typer.Option(..., "--out", help="Folder for the parquet parts (re-running resumes)"),
    scheduler: str | None = typer.Option(None, "--scheduler", help="Dask scheduler address (tcp://host:8786)"),
    devices: int | None = typer.Option(None, "--devices", help="Local devices to shard over (default: all)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a different sweep already in --out"),
) -> None:
    """Run a parameter sweep chunk by chunk into --out (re-running resumes) and print its points."""
    check_out_dir(out)
    enable_compile_cache()
    from bdpd_jax.sweeps.sweep_file import load_sweep_file, run_sweep_file

    console = Console()
    sp = load_sweep_file(spec)
    t0 = time.perf_counter()
    r = run_sweep_file(sp, out, progress=True, devices=devices, client=scheduler, overwrite=overwrite)
    import pandas as pd

    console.print(points_table(pd.read_parquet(r.out / "points.parquet"), list(sp.table.columns), r.meta))
    console.print(
        escape(
            f"{len(sp.table)} points x {sp.options.replicates} replicates in {r.n_chunks} chunk(s): computed "
            f"{len(r.computed)}, already written {len(r.skipped)}, {time.perf_counter() - t0:.2f} s; wrote {out}/ "
            f"(read it back: bdpd show {out}, or bdpd_jax.load({str(out)!r}))"
        )
    )


@app.command(cls=with_examples(_spec_examples("search_example.toml", "bdpd search spec.toml --out search1/")))
@guarded()
def search(
    spec: Path = typer.Argument(..., help="Search spec (TOML): config, space, objective, constraints, method, ..."),
    out: Path = typer.Option(..., "--out", help="Folder for the generations and results (re-running resumes)"),
) -> None:
    """Search config paths for the rules that meet a goal (bdpd_jax.search); re-running resumes.

    Each generation is one batched sweep; a progress bar shows the generations and the best so far."""
    check_out_dir(out)
    enable_compile_cache()
    from bdpd_jax.searches import search as run_search
    from bdpd_jax.searches.spec import load_search_spec

    console = Console()
    sp = load_search_spec(spec)
    t0 = time.perf_counter()
    res = run_search(sp.config, out=out, progress=True, **sp.kwargs)
    best = res.best
    m = best["metrics"]
    shown = {c: m[c] for c in m if c.endswith("_mean") or c in ("feasible", "violation")}
    console.print(
        escape(
            f"{len(res.history)} candidates in {res.history['generation'].nunique()} generations, "
            f"{time.perf_counter() - t0:.2f} s; wrote {out}/ (read it back: bdpd_jax.load({str(out)!r}))"
        )
    )
    console.print(escape(f"best (generation {best['generation']}): {best['point']!r}"))
    console.print(escape(", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items())))


SERVE_EXAMPLES = """
Examples:
  bdpd serve
  bdpd serve --port 3000 --arenas arenas --operator operator.json
"""


@app.command(cls=with_examples(SERVE_EXAMPLES))
@guarded()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on"),
    port: int = typer.Option(3000, "--port", help="TCP port"),
    arenas: Path = typer.Option(Path("arenas"), "--arenas", help="Folder of the arenas (meta.json, turns.jsonl, ...)"),
    cors: list[str] | None = typer.Option(None, "--cors", help="Allowed CORS origin (repeat; '*' for any)"),
    no_talk: bool = typer.Option(False, "--no-talk", help="New arenas default to noTalk (harvest only)"),
    workers: int = typer.Option(2, "--workers", help="Kernel-bound arena ticks running at once"),
    switch_ms: float = typer.Option(1.0, "--switch-ms", help="Python's thread switch interval (ms)"),
    group_ticks: bool = typer.Option(
        True, "--group-ticks/--no-group-ticks", help="Tick auto arenas sharing a compiled game and interval together"
    ),
    operator: Path | None = typer.Option(
        None, "--operator", help="JSON file of LLM credentials and allowed endpoints (operator only; README)"
    ),
) -> None:
    """Serve the HTTP API and the dashboard at http://HOST:PORT/."""
    from .cli_serve import serve as run_server

    run_server(host, port, arenas, cors, no_talk, workers, switch_ms, group_ticks, operator)


@app.command()
def version() -> None:
    """Print the package version."""
    typer.echo(bdpd_jax.__version__)


def main(argv: list[str] | None = None) -> None:
    """The ``bdpd`` entry point: the process settings first, then the command."""
    configure()  # before any command imports jax or equinox (nothing above has)
    app(args=argv)


if __name__ == "__main__":
    main()
