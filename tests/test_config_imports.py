"""bdpd_jax.config imports without a cycle (issue 36): the import graph of its modules, read with
``ast`` and counting an import of a package's name as an edge to its ``__init__``, is acyclic;
and each engine config module imports first in a fresh interpreter."""

from __future__ import annotations

import ast
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter

from test_architecture import MODULES

CONFIG = "bdpd_jax.config"


def _targets(module: str) -> set[str]:
    """The modules ``module`` imports (``TYPE_CHECKING`` imports too): ``from pkg import name``
    is an edge to ``pkg.name`` when that is a module, else to ``pkg`` (its ``__init__`` runs)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            target = ".".join(x for x in (base, node.module or "") if x)
            out |= {f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target for a in node.names}
    return out


def _config_graph() -> dict[str, set[str]]:
    """Module -> the bdpd_jax.config modules it imports, packages included."""
    mods = {m for m in MODULES if m == CONFIG or m.startswith(CONFIG + ".")}
    return {m: (_targets(m) & mods) - {m} for m in mods}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as e:
        return list(e.args[1])
    return None


def test_config_modules_import_no_cycle() -> None:
    graph = _config_graph()
    engines = f"{CONFIG}.engines"
    # the walk sees the package edges the host guard leaves out: the engine modules import the
    # registry module, never the package that imports them
    assert f"{engines}.base" in graph[f"{engines}.logistic"] and engines not in graph[f"{engines}.logistic"]
    cycle = _find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_config_graph_sees_an_import_of_the_package() -> None:
    """The graph would catch the old layout: a submodule importing its package's names."""
    graph = _config_graph()
    graph[f"{CONFIG}.engines.seneca"].add(f"{CONFIG}.engines")
    assert _find_cycle(graph) is not None


def test_each_engine_config_module_imports_first() -> None:
    """Each engine config module is the first of bdpd_jax imported in its interpreter, and every
    shipped engine's model is then registered. One fresh interpreter loads the third-party
    libraries once (jax, equinox, diffrax: most of the cost) and forks one child per module, before
    any bdpd_jax module is imported."""
    engines = sorted(m for m in MODULES if m.startswith(f"{CONFIG}.engines."))
    assert f"{CONFIG}.engines.seneca" in engines and f"{CONFIG}.engines.base" in engines
    script = f"""
import importlib, os, sys, traceback
import diffrax, equinox, jax, numpy, pydantic
assert not any(m.startswith("bdpd_jax") for m in sys.modules)
for name in {engines!r}:
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
            from bdpd_jax.config.engines import ENGINE_CONFIGS
            from bdpd_jax.config.game import ArenaConfig
            assert {{"govsim", "logistic", "seneca"}} <= set(ENGINE_CONFIGS), sorted(ENGINE_CONFIGS)
            seneca = ArenaConfig.model_validate({{"model": {{"engineMode": "seneca"}}}}).model.engine
            assert seneca.commons_initial == 1.0
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    print(name, "ok" if code == 0 else "failed", flush=True)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == [w for m in engines for w in (m, "ok")], proc.stderr[-2000:]
