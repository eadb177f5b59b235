"""No module outside an engine's own files names an engine (read with ``ast``, no imports run),
nor do the dashboard's scripts: what differs by engine is declared by the engine
(kernels/engines/<name>.py) or its config model (bdpd_jax/config/engines/<name>.py), so an
engine registered later (tests/test_toy_engine.py) works everywhere. The exceptions are listed
with their reason."""

from __future__ import annotations

import ast
import re

from test_architecture import MODULES, ROOT, probe


def _engine_names() -> dict[str, str]:
    """Shipped engine name -> its kernel module, read from the ``name = "..."`` of each class in
    kernels/engines/ (no import)."""
    out = {}
    for module in MODULES:
        if not module.startswith("bdpd_jax.kernels.engines."):
            continue
        for cls in (n for n in ast.walk(ast.parse(MODULES[module].read_text())) if isinstance(n, ast.ClassDef)):
            for st in cls.body:
                if (
                    isinstance(st, ast.Assign)
                    and [getattr(t, "id", None) for t in st.targets] == ["name"]
                    and isinstance(st.value, ast.Constant)
                ):
                    out[str(st.value.value)] = module
    return out


#: (module, engine name) pairs allowed outside the engine's own files, and why
ENGINE_NAME_EXCEPTIONS = {
    ("bdpd_jax.config.game", "logistic"): "ModelConfig's default engineMode (the seed's example)",
    ("bdpd_jax.scenarios", "govsim"): "the GovSim scenario presets, by design",
    ("bdpd_jax.results.schema", "govsim"): "the GovSim outcome table's name (a report of every engine)",
    ("bdpd_jax.host.live.records", "govsim"): "the summary's GovSim outcome block (every engine)",
    # issue 37: GovSim's month for LLM players is a player architecture and a conversation
    # protocol named "govsim" (a player option and a discussion option, not the engine)
    ("bdpd_jax.config.discussion", "govsim"): "discussion.protocol 'govsim' (GovSim's meeting), not the engine",
    ("bdpd_jax.host.live.govsim_talk", "govsim"): "the 'govsim' conversation protocol it runs, not the engine",
    ("bdpd_jax.host.live.players", "govsim"): "the LLM player's architecture 'govsim' (issue 37), not the engine",
    ("bdpd_jax.host.player_kinds", "govsim"): "the LLM kind builds the 'govsim' architecture's agent, not the engine",
    ("bdpd_jax.host.agents.govsim_agent", "govsim"): "the LLM player's architecture 'govsim', not the engine",
}
#: dashboard files allowed to name engines: the index's create form offers the seed's examples
WEB_EXCEPTIONS = {"index.html"}


def _named_engines(module: str, names: set[str]) -> list[tuple[str, int]]:
    """(engine name, line) of every string literal in ``module`` that is exactly an engine's name."""
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    return [
        (n.value, n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names
    ]


def _engine_own_files(names: dict[str, str]) -> set[str]:
    return {m for name in names for m in (f"bdpd_jax.kernels.engines.{name}", f"bdpd_jax.config.engines.{name}")}


def test_no_module_outside_an_engines_files_names_an_engine() -> None:
    """What differs by engine is declared by the engine (kernels/engines/<name>.py) or its config
    model (bdpd_jax/config/engines/<name>.py), never branched on by name elsewhere, so an engine
    registered later (tests/test_toy_engine.py) works everywhere; the dashboard's scripts too."""
    names = _engine_names()
    assert {"logistic", "seneca", "govsim"} <= set(names)
    own = _engine_own_files(names)
    bad = [
        f"{m}:{line} names {name!r}"
        for m in MODULES
        if m not in own
        for name, line in _named_engines(m, set(names))
        if (m, name) not in ENGINE_NAME_EXCEPTIONS
    ]
    web = ROOT / "bdpd_jax" / "host" / "server" / "web"
    alternatives = "|".join(map(re.escape, names))
    literal = re.compile(rf"""["'`]({alternatives})["'`]""")
    for path in sorted(web.glob("*.js")) + sorted(web.glob("*.html")):
        if path.name not in WEB_EXCEPTIONS:
            for k, text in enumerate(path.read_text().splitlines(), 1):
                bad += [f"web/{path.name}:{k} names {m.group(1)!r}" for m in literal.finditer(text)]
    assert not bad, "\n".join(bad)


def test_the_engine_name_guard_sees_what_it_forbids(tmp_path) -> None:
    text = '"""About seneca."""\ndef f(m):\n    return m.engineMode == "seneca" or m.x == "logistics"\n'
    with probe(tmp_path, "bdpd_jax.sweeps.probe", text):
        assert _named_engines("bdpd_jax.sweeps.probe", set(_engine_names())) == [("seneca", 3)]
        assert "bdpd_jax.config.engines.seneca" in _engine_own_files(_engine_names())
