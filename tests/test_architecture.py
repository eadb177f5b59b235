"""Guards on the package's structure, read from the source with ``ast`` (no imports run).

- the kernels import nothing from the host (they are installed as ``bdpd_jax.kernels``);
- no module imports another module's ``_private`` name;
- no import cycles among the host's modules, ``TYPE_CHECKING`` edges included;
- the live host sets no attribute from outside its class, and each class's ``__init__`` sets
  every attribute its methods set;
- the spine: config imports nothing from prepare, run, sweeps, results or host, and builds no
  kernel layer; prepare imports nothing from run, sweeps, results or host.

No engine named outside its own files: tests/test_engine_names.py.
"""

from __future__ import annotations

import ast
import contextlib
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ALLOWED_THIRD_PARTY_IN_KERNELS = {
    "jax",
    "jaxlib",
    "numpy",
    "equinox",
    "diffrax",
    "typing",
    "dataclasses",
    "functools",
    "math",
    "collections",
    "__future__",
    "enum",
    "abc",
    "contextlib",
    "itertools",
    "operator",
    "types",
    "warnings",
    "inspect",
}


def _modules() -> dict[str, Path]:
    """Dotted module name -> source file, for the host package and the kernels."""
    out: dict[str, Path] = {}
    for base, pkg in ((ROOT / "bdpd_jax", "bdpd_jax"), (ROOT / "kernels", "bdpd_jax.kernels")):
        for path in base.rglob("*.py"):
            rel = path.relative_to(base).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([pkg, *parts])] = path
    return out


MODULES = _modules()


@contextlib.contextmanager
def probe(tmp_path: Path, name: str, text: str) -> Iterator[Path]:
    """A module of ``text`` seen by the guards as ``name`` while the block runs (each guard's
    own test that it sees what it forbids)."""
    src = tmp_path / "m.py"
    src.write_text(text)
    MODULES[name] = src
    try:
        yield src
    finally:
        del MODULES[name]


@functools.cache
def _parsed(text: str, filename: str) -> ast.Module:
    return ast.parse(text, filename)


def _tree(module: str) -> ast.Module:
    """``module``'s syntax tree, parsed once per text (a probe rewrites its file's text); the
    guards only read it."""
    path = MODULES[module]
    return _parsed(path.read_text(), str(path))


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute dotted name an ``ImportFrom`` refers to, from inside ``module``."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not _is_package(module):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Lines of imports under ``if TYPE_CHECKING:`` (annotations only, never run)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            for sub in node.body:
                lines.update(n.lineno for n in ast.walk(sub) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return lines


def _imports(module: str, *, type_checking: bool = True) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import in ``module``
    (without those under ``if TYPE_CHECKING:`` when ``type_checking`` is False)."""
    tree = _tree(module)
    skip = set() if type_checking else _type_checking_lines(tree)
    out: list[tuple[str, str | None, int]] = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                # ``from pkg import submodule`` imports a module, not a name
                out.append((sub, None, node.lineno) if sub in MODULES else (target, alias.name, node.lineno))
    return out


def test_kernels_import_nothing_from_the_host() -> None:
    bad = []
    for module in MODULES:
        if not module.startswith("bdpd_jax.kernels"):
            continue
        for target, _, line in _imports(module):
            top = target.split(".")[0]
            if target.startswith("bdpd_jax") and not target.startswith("bdpd_jax.kernels"):
                bad.append(f"{module}:{line} imports {target}")
            elif top != "bdpd_jax" and top not in ALLOWED_THIRD_PARTY_IN_KERNELS:
                bad.append(f"{module}:{line} imports {target} (kernels stay pure: no I/O libraries)")
    assert not bad, "\n".join(bad)


def test_no_module_imports_another_modules_private_name() -> None:
    bad = []
    for module in MODULES:
        for target, name, line in _imports(module):
            if name is None or not name.startswith("_") or name.startswith("__"):
                continue
            if target in MODULES and target != module:
                bad.append(f"{module}:{line} imports {target}.{name}")
    assert not bad, "\n".join(bad)


def _host_graph(*, type_checking: bool = True) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        if module.startswith("bdpd_jax.kernels"):
            continue
        edges = set()
        for target, _, _ in _imports(module, type_checking=type_checking):
            # a package's __init__ runs on any import beneath it, but that is not an edge of the
            # importer's design; only the named module counts
            if (
                target in MODULES
                and not target.startswith("bdpd_jax.kernels")
                and target != module
                and target != "bdpd_jax"
                and not _is_package(target)
            ):
                edges.add(target)
        graph[module] = edges
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_runtime_import_cycles_among_host_modules() -> None:
    cycle = _find_cycle(_host_graph(type_checking=False))
    assert cycle is None, " -> ".join(cycle or [])


def test_no_import_cycles_among_host_modules_type_checking_included() -> None:
    cycle = _find_cycle(_host_graph())
    assert cycle is None, " -> ".join(cycle or [])


def _foreign_attribute_stores(module: str) -> list[str]:
    """``x.attr = ...`` (plain, augmented, annotated or unpacked) where ``x`` is not ``self`` or
    ``cls``; Starlette's ``app.state`` is exempt (an attribute bag made to be set so)."""
    tree = _tree(module)
    bad = []
    for node in ast.walk(tree):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else ([node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        )
        for target in targets:
            for sub in ast.walk(target):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.ctx, ast.Store)
                    and not (isinstance(sub.value, ast.Name) and sub.value.id in ("self", "cls"))
                    and not (isinstance(sub.value, ast.Attribute) and sub.value.attr == "state")
                ):
                    bad.append(f"{module}:{node.lineno} sets {ast.unparse(sub)}")
    return bad


def _attributes_set_after_init(module: str) -> list[str]:
    """``self.x = ...`` in a method of a class whose ``__init__`` (or ``__post_init__``, or the
    class body: dataclass fields) never sets ``x``."""
    tree = _tree(module)
    bad = []
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        declared = {
            t.id
            for st in cls.body
            for t in (
                [st.target] if isinstance(st, ast.AnnAssign) else st.targets if isinstance(st, ast.Assign) else []
            )
            if isinstance(t, ast.Name)
        }
        later: dict[str, str] = {}
        for fn in cls.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for n in ast.walk(fn):
                if (
                    isinstance(n, ast.Attribute)
                    and isinstance(n.ctx, ast.Store)
                    and isinstance(n.value, ast.Name)
                    and n.value.id == "self"
                ):
                    if fn.name in ("__init__", "__post_init__"):
                        declared.add(n.attr)
                    else:
                        later.setdefault(n.attr, fn.name)
        bad += [
            f"{module}.{cls.name}.{fn}() sets self.{a}, which __init__ never sets"
            for a, fn in later.items()
            if a not in declared
        ]
    return bad


def _live_host() -> list[str]:
    return [m for m in MODULES if m.startswith("bdpd_jax.host.")]


def test_the_live_host_sets_no_attribute_from_outside_its_class() -> None:
    bad = [line for module in _live_host() for line in _foreign_attribute_stores(module)]
    assert not bad, "\n".join(bad)


def test_the_live_hosts_classes_set_every_attribute_in_init() -> None:
    bad = [line for module in _live_host() for line in _attributes_set_after_init(module)]
    assert not bad, "\n".join(bad)


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_import_reader_sees_relative_and_type_checking_imports() -> None:
    edges = {target for target, _, _ in _imports("bdpd_jax.sweeps.plan")}
    assert "bdpd_jax.run.simulate" in edges  # a relative import (``from ..run.simulate import ...``)
    assert "bdpd_jax.host.live.arena_run" in {target for target, _, _ in _imports("bdpd_jax.host.live.records")}
    assert "bdpd_jax.host.live.arena_run" not in {
        t for t, _, _ in _imports("bdpd_jax.host.live.records", type_checking=False)
    }


def test_the_attribute_guards_see_what_they_forbid(tmp_path) -> None:
    text = "class A:\n    def f(self, o):\n        self.x = 1\n        o.y, (o.z, w) = 1, (2, 3)\n        o.n += 1\n"
    with probe(tmp_path, "probe", text) as src:
        assert _foreign_attribute_stores("probe") == ["probe:4 sets o.y", "probe:4 sets o.z", "probe:5 sets o.n"]
        src.write_text(
            "class A:\n    k: int = 0\n    def __init__(self):\n        self.x = 1\n"
            "    def f(self):\n        self.x, self.k, self.y = 2, 3, 4\n"
        )
        assert _attributes_set_after_init("probe") == ["probe.A.f() sets self.y, which __init__ never sets"]


def _imports_of_package(package: str) -> list[tuple[str, str, int]]:
    """(module, imported module, line) for every import in a host package's modules, those
    under ``if TYPE_CHECKING:`` and inside functions included."""
    return [
        (m, target, line)
        for m in MODULES
        if m == package or m.startswith(package + ".")
        for target, _, line in _imports(m)
    ]


def _reaches(bad: list[str]):
    return lambda target: any(target == b or target.startswith(b + ".") for b in bad)


def test_config_imports_nothing_from_prepare_run_sweeps_results_or_host() -> None:
    """The spine: config -> prepare -> run -> results; config is the first stage."""
    hit = _reaches([f"bdpd_jax.{p}" for p in ("prepare", "run", "sweeps", "results", "host")])
    bad = [f"{m}:{line} imports {t}" for m, t, line in _imports_of_package("bdpd_jax.config") if hit(t)]
    assert not bad, "\n".join(bad)


def test_prepare_imports_nothing_from_run_sweeps_results_or_host() -> None:
    hit = _reaches([f"bdpd_jax.{p}" for p in ("run", "sweeps", "results", "host")])
    bad = [f"{m}:{line} imports {t}" for m, t, line in _imports_of_package("bdpd_jax.prepare") if hit(t)]
    assert not bad, "\n".join(bad)


def test_the_host_parts_import_one_way() -> None:
    """``server`` -> ``live`` -> ``agents``: the players see only their own package and the wire
    JSON (``jsonio``), so a player kind is written against ``agents/`` alone; the arena never
    reaches the HTTP API (docs/semantics/live/arena.md, "The host in three parts")."""
    host = "bdpd_jax.host"
    own = _reaches([f"{host}.agents", f"{host}.jsonio"])
    agents = [
        f"{m}:{line} imports {t}"
        for m, t, line in _imports_of_package(f"{host}.agents")
        if t.startswith(host) and not own(t)
    ]
    live = _reaches([f"{host}.server"])
    arena = [f"{m}:{line} imports {t}" for m, t, line in _imports_of_package(f"{host}.live") if live(t)]
    assert not agents + arena, "\n".join(agents + arena)


#: kernel objects only prepare/ builds from a config: the static game, its params and its layers
KERNEL_BUILDS = ("Game", "Params", "PerturbParams")


def _kernel_builds(module: str) -> list[str]:
    """Calls in ``module`` that construct a kernel ``Game``, ``Params``, ``PerturbParams`` or any
    ``*Layer`` (by the called name, plain or ``module.Name``)."""
    tree = _tree(module)
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in KERNEL_BUILDS or name.endswith("Layer"):
                bad.append(f"{module}:{node.lineno} builds {ast.unparse(f)}")
    return bad


def test_config_builds_no_kernel_layer() -> None:
    """config/ validates; turning a config into the kernels' game, params and layers is
    prepare/'s job (prepare/perturbations.py, prepare/plugins.py, prepare/game.py)."""
    bad = [b for m in MODULES if m.startswith("bdpd_jax.config") for b in _kernel_builds(m)]
    assert not bad, "\n".join(bad)


def test_the_kernel_build_guard_sees_what_it_forbids(tmp_path) -> None:
    text = "def f(K, pk):\n    return K.PluginLayer(types=()), pk.PerturbParams(), Params(), len([])\n"
    with probe(tmp_path, "bdpd_jax.config.probe", text):
        assert _kernel_builds("bdpd_jax.config.probe") == [
            "bdpd_jax.config.probe:2 builds K.PluginLayer",
            "bdpd_jax.config.probe:2 builds pk.PerturbParams",
            "bdpd_jax.config.probe:2 builds Params",
        ]


def test_build_is_called_only_through_prepare_by_run_and_host() -> None:
    """``simulate`` and the live host prepare through ``prepare`` (one preparation), never by
    calling ``prepare.game.build`` themselves."""
    bad = [
        f"{m}:{line} imports build"
        for m in MODULES
        if m.startswith(("bdpd_jax.run", "bdpd_jax.host"))
        for target, name, line in _imports(m)
        if target == "bdpd_jax.prepare.game" and name == "build"
    ]
    assert not bad, "\n".join(bad)


def test_the_package_guards_see_what_they_forbid(tmp_path) -> None:
    with probe(tmp_path, "bdpd_jax.config.probe", "def f():\n    from ..prepare.game import build\n"):
        found = [t for m, t, _ in _imports_of_package("bdpd_jax.config") if m == "bdpd_jax.config.probe"]
        assert found == ["bdpd_jax.prepare.game"] and _reaches(["bdpd_jax.prepare"])(found[0])
    probes = {
        "bdpd_jax.host.agents.probe": (
            "from bdpd_jax.host.live.messages import MessageBus\n",
            ":1 imports bdpd_jax.host.live",
        ),
        "bdpd_jax.host.live.probe": (
            "def f():\n    from ..server import live\n",
            ":2 imports bdpd_jax.host.server.live",
        ),
    }
    for name, (text, says) in probes.items():
        with probe(tmp_path, name, text), pytest.raises(AssertionError, match=f"{name}{says}"):
            test_the_host_parts_import_one_way()


# The library's public surface for the lab (studies/ and bench/): the package's names, the
# middle tier (bdpd_jax.lab, bdpd_jax.prepare), the kernels, the sweep modules and the live
# host. Everything else is internal to the library.
INTERNAL = (
    "bdpd_jax.run",
    "bdpd_jax.config",
    "bdpd_jax.results",
    "bdpd_jax.cli",
    "bdpd_jax.sweeps.build",
)


def _script_imports(path: Path) -> list[tuple[str, str | None, int]]:
    """(module, name or None, line) of every absolute import in a script (a script is no package)."""
    out: list[tuple[str, str | None, int]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out += [(node.module, a.name, node.lineno) for a in node.names]
    return out


def _lab_violations(path: Path) -> list[str]:
    bad = []
    for module, name, line in _script_imports(path):
        if module != "bdpd_jax" and not module.startswith("bdpd_jax."):
            continue
        full = module if name is None or f"{module}.{name}" not in MODULES else f"{module}.{name}"
        private = any(p.startswith("_") for p in full.split(".")) or (name or "").startswith("_")
        internal = any(full == m or full.startswith(m + ".") for m in INTERNAL) or full.startswith("bdpd_jax.prepare.")
        if private or internal:
            bad.append(
                f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{line} imports "
                f"{full}{'' if name is None or full.endswith(name) else '.' + name}"
            )
    return bad


def test_studies_and_bench_use_only_the_public_tier() -> None:
    scripts = sorted((ROOT / "studies").glob("*.py")) + sorted((ROOT / "bench").glob("*.py"))
    bad = [line for path in scripts for line in _lab_violations(path)]
    assert not bad, "\n".join(bad)


def test_the_lab_guard_sees_what_it_forbids(tmp_path) -> None:
    src = tmp_path / "s.py"
    src.write_text(
        "from bdpd_jax._env import apply_env\nfrom bdpd_jax.prepare.game import build\n"
        "from bdpd_jax.run import simulate\nfrom bdpd_jax import lab, _private\nimport bdpd_jax.config.game\n"
        "from bdpd_jax.host.live.arena import Arena\nfrom bdpd_jax import prepare\n"
    )
    assert [b.split(" imports ")[1] for b in _lab_violations(src)] == [
        "bdpd_jax._env.apply_env",
        "bdpd_jax.prepare.game.build",
        "bdpd_jax.run.simulate",
        "bdpd_jax._private",
        "bdpd_jax.config.game",
    ]


# -- the tick path (issue 24 item 4; docs/semantics/live/arena.md "The tick path") -------------------
def _calls(module: str, name: str) -> list[ast.Call]:
    """The calls of ``name`` (a function or a method of any object; every call when empty) in ``module``."""
    tree = _tree(module)
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and (not name or name in (getattr(n.func, "attr", None), getattr(n.func, "id", None)))
    ]


def _self_stores(module: str, cls_name: str) -> set[str]:
    """The attributes ``self.x = ...`` of class ``cls_name`` in ``module``."""
    tree = _tree(module)
    cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls_name)
    return {
        n.attr
        for n in ast.walk(cls)
        if isinstance(n, ast.Attribute)
        and isinstance(n.ctx, ast.Store)
        and isinstance(n.value, ast.Name)
        and n.value.id == "self"
    }


def test_the_tick_path_keeps_its_rules() -> None:
    runner = "bdpd_jax.host.live.batch_runner"
    # one owner of an arena's kernel state (its ArenaRun): no batch keeps one, no arena binds to a batch
    assert not {"state", "kernel_leaves"} & _self_stores(runner, "LockstepBatch")
    assert "kernel_leaves" in _self_stores("bdpd_jax.host.live.arena_run", "ArenaRun")
    assert not {"_batch", "_b"} & _self_stores("bdpd_jax.host.live.arena", "Arena")
    assert "shared" not in _self_stores("bdpd_jax.host.server.ticker", "Ticker")
    # the pact table: one kernel -> host sync per tick, in the batch's tick only
    assert [m for m in _live_host() if _calls(m, "sync")] == [runner] and len(_calls(runner, "sync")) == 1
    # actions validated once: the tick dispatches what the agents validated
    assert not _calls(runner, "validate_action")
    assert all(any(k.arg == "validated" for k in c.keywords) for c in _calls(runner, "dispatch_tool"))
    bus_calls = {
        c.func.attr
        for c in _calls("bdpd_jax.host.live.dispatch", "")
        if isinstance(c.func, ast.Attribute) and getattr(c.func.value, "attr", None) == "bus"
    }
    assert bus_calls == {"post", "is_known"}, bus_calls  # the bus stores validated actions unchecked
    # nothing re-derived from the config per tick; no event loop made by the tick
    assert not _calls("bdpd_jax.host.live.records", "sanction_specs")
    assert not _calls(runner, "new_event_loop")
    # one event loop per process: only a sync caller's SyncLoop makes one (never the server's code)
    assert [m for m in _live_host() if _calls(m, "new_event_loop")] == ["bdpd_jax.host.live.sync_loop"]
    # the path from the route to the kernel is counted as it runs: tests/host/test_tick_path.py
