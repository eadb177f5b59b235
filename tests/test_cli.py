"""The ``bdpd`` command follows its own rules (issue 40; issue 35's CLI item): no JAX before a
command runs, help examples that paste, every expected failure one line and exit 2 naming
the flag or the path (``players[2].intensity``) with a "did you mean", nothing left behind."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import socket
import subprocess
import sys
import tomllib

import pandas as pd
import pytest
import typer.main
from typer.testing import CliRunner

from bdpd_jax import cli
from bdpd_jax.cli import app
from bdpd_jax.cli_support import example_file

COMMANDS = ("run", "config", "show", "sweep", "search", "serve", "version")


def _invoke(args: list[str]):
    r = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
    return r, r.output  # (stdout and stderr together)


def _cli_in_fresh_interpreter(commands: list[list[str]], tail: list[str], heavy: tuple[str, ...]):
    """Run each CLI command (plus ``tail``) in one fresh interpreter, every one exiting 0, then
    print ``HEAVY [...]``: which of the ``heavy`` modules that interpreter imported."""
    code = (
        "import sys\nfrom bdpd_jax.cli import main\n"
        f"for c in {commands!r}:\n"
        f"    try:\n        main([*c, *{tail!r}])\n"
        "    except SystemExit as e:\n        assert not e.code, (c, e.code)\n"
        f"print('HEAVY', sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_help_imports_no_jax_and_a_run_warns_nothing() -> None:
    p = _cli_in_fresh_interpreter([[], *[[n] for n in COMMANDS]], ["--help"], ("jax", "equinox", "numpy"))
    assert p.returncode == 0 and "HEAVY []" in p.stdout, p.stdout[-500:] + p.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k not in ("EQX_ON_ERROR", "XLA_FLAGS")}
    p = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "bdpd_jax", "config", "--full"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )  # (--full validates: the engines and equinox are imported after the settings)
    assert p.returncode == 0 and "Warning" not in p.stderr, p.stderr[-2000:]
    assert json.loads(p.stdout)["model"]["engineMode"] == "logistic"
    if importlib.util.find_spec("fastapi") is not None:  # the server's own entry point imports the host first
        cmd = [sys.executable, "-W", "error::RuntimeWarning", "-m", "bdpd_jax.host.server", "--help"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        assert p.returncode == 0 and "Warning" not in p.stderr, p.stderr[-2000:]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_examples_are_verbatim_and_parse(command, tmp_path) -> None:
    r, out = _invoke([command, "--help"])
    assert r.exit_code == 0, out
    group = typer.main.get_command(app)
    for name in ("sweep", "search"):
        if command == name:
            spec = example_file(f"{name}_example.toml")
            assert all(line in out.splitlines() for line in spec.splitlines()), out  # not wrapped
            assert tomllib.loads(spec)["config"] == "arena.json"
    lines = [ln.strip() for ln in out.splitlines() if ln.startswith("  bdpd ")]
    assert lines or command == "version", out
    for line in lines:
        args = shlex.split(line.split(">")[0])[1:]
        sub = group.commands[args[0]]  # type: ignore[attr-defined]
        sub.make_context(args[0], args[1:])  # parses, or raises a usage error


BAD_CONFIG = {
    "model": {"threshold": 5},
    "players": [{"strategy": "conservative"}, {"strategy": "adaptive"}, {"strategy": "agressive", "intensty": 0.3}],
}


@pytest.mark.parametrize(
    "args, needles",
    [
        (["run", "-n", "0"], ["--arenas"]),
        (["run", "--arenas", "abc"], ["--arenas"]),
        (["run", "--generator", "thrfry"], ["--generator", "did you mean 'threefry'"]),
        (["run", "--scenario", "govsim:fishery/defualt"], ["did you mean 'govsim:fishery/default'"]),
        (
            ["run", "{bad}"],
            ["players[2].intensty", "did you mean 'intensity'", "players[2].strategy", "did you mean 'aggressive'"],
        ),
        (["run", "--out", "{full}"], ["--out", "--overwrite"]),
        (["show", "{tmp}"], ["summary.parquet"]),
        (["config", "--scenario", "pasture"], ["--scenario"]),
        (["search", "{objective}", "--out", "{new}"], ["did you mean 'survived_mean'", "more)"]),
    ],
)
def test_every_expected_failure_is_one_line_and_exit_2(args, needles, tmp_path) -> None:
    (tmp_path / "bad.json").write_text(json.dumps(BAD_CONFIG))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("x")
    (tmp_path / "arena.json").write_text(example_file("default.json"))
    spec = example_file("search_example.toml").replace('["model.regenRate", "min"]', '["survivd_mean", "max"]')
    (tmp_path / "objective.toml").write_text(spec)
    paths = {"{bad}": str(tmp_path / "bad.json"), "{full}": str(tmp_path / "full"), "{tmp}": str(tmp_path)}
    paths |= {"{objective}": str(tmp_path / "objective.toml"), "{new}": str(tmp_path / "new")}
    r, out = _invoke([paths.get(a, a) for a in args])
    assert r.exit_code == 2 and "Traceback" not in out, out
    assert len(out.strip().splitlines()) == 1 and out.startswith("error: "), out
    assert all(n in out for n in needles), out
    assert (tmp_path / "full" / "keep.txt").read_text() == "x" and not (tmp_path / "new").exists()


def test_a_missing_extra_names_the_install_and_leaves_no_folder(tmp_path, monkeypatch) -> None:
    (tmp_path / "arena.json").write_text(example_file("default.json"))
    spec = tomllib.loads(example_file("search_example.toml"))
    text = example_file("search_example.toml").replace("population = 32", "population = 2")
    assert spec["population"] == 32
    (tmp_path / "s.toml").write_text(text)
    for mod in ("evosax", "evosax.algorithms"):
        monkeypatch.setitem(sys.modules, mod, None)
    r, out = _invoke(["search", str(tmp_path / "s.toml"), "--out", str(tmp_path / "res")])
    assert r.exit_code == 2 and "pip install -e '.[search]'" in out and len(out.strip().splitlines()) == 1, out
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize(
    "exc, needle",
    [
        (KeyboardInterrupt(), "error: interrupted"),
        (MemoryError(), "error: out of memory"),
        (OverflowError("int too large to convert to float"), "error: OverflowError: int too large"),
        (OSError(28, "No space left on device", "results/x.parquet"), "error: results/x.parquet: No space left"),
        (RecursionError("maximum recursion depth exceeded"), "error: RecursionError"),
    ],
)
def test_ctrl_c_and_the_machine_s_limits_are_one_line(exc, needle, monkeypatch) -> None:
    def fails(name):
        raise exc

    monkeypatch.setattr(cli, "starting_config", fails)
    r, out = _invoke(["config"])
    assert r.exit_code == 2 and out.startswith(needle) and len(out.strip().splitlines()) == 1, out


def test_a_bug_still_shows_its_traceback(monkeypatch) -> None:
    def bug(name):
        raise AttributeError("a bug")

    monkeypatch.setattr(cli, "starting_config", bug)
    r, _ = _invoke(["config"])
    assert r.exit_code == 1 and isinstance(r.exception, AttributeError)


def test_serve_on_a_busy_port_fails_first_and_creates_nothing(tmp_path) -> None:
    pytest.importorskip("uvicorn")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r, out = _invoke(["serve", "--port", str(port), "--arenas", str(tmp_path / "new")])
    assert r.exit_code == 2 and "--port" in out and "bdpd serve: http" not in out, out
    assert not (tmp_path / "new").exists()


def test_config_prints_what_a_scenario_runs() -> None:
    from bdpd_jax.scenarios import govsim

    r, out = _invoke(["config", "--scenario", "govsim:fishery/newcomer"])
    assert r.exit_code == 0 and json.loads(r.stdout) == govsim("fishery", "newcomer")


def test_a_govsim_run_shows_govsims_metrics_without_jax_refuses_its_folder_then_overwrites(tmp_path) -> None:
    out_dir = tmp_path / "res"
    args = ["run", "--scenario", "govsim:fishery/default", "-n", "3", "--turns", "3", "--out", str(out_dir)]
    r, out = _invoke(args)
    assert r.exit_code == 0, out
    assert "govsim_gain" in out and "collapse turn nan" not in out, out
    (out_dir / "notes.txt").write_text("mine")
    r, out = _invoke(args)
    assert r.exit_code == 2 and "--overwrite" in out, out
    r, out = _invoke([*args, "--seed", "1", "--overwrite"])  # (the same shapes: no second compile)
    assert r.exit_code == 0, out
    assert (out_dir / "notes.txt").read_text() == "mine"  # --overwrite replaces the results only
    assert json.loads((out_dir / "meta.json").read_text())["seed"] == 1
    assert len(pd.read_parquet(out_dir / "summary.parquet")) == 3
    # the read-only commands start no jax: show reads the engine's metrics from the meta
    p = _cli_in_fresh_interpreter([["version"], ["config"], ["show", str(out_dir)]], [], ("jax", "equinox"))
    assert p.returncode == 0 and "HEAVY []" in p.stdout, p.stdout[-500:] + p.stderr[-2000:]
    assert "govsim_gain" in p.stdout and "survival rate" not in p.stdout, p.stdout
