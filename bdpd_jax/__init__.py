"""bdpd_jax: the BDPD commons-governance arena as a vectorized JAX batch simulator.

Importing the package changes nothing in the process and loads nothing heavy: the public
names below are loaded on first use. ``bdpd_jax.configure()`` applies the package's process
settings (``XLA_FLAGS``, ``EQX_ON_ERROR``; docs/semantics/performance.md), so call it first,
before the first run (the ``bdpd`` CLI does).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._env import configure

if TYPE_CHECKING:
    from . import kernels, lab, scenarios
    from .config.game import ArenaConfig, default_config
    from .kernels.policies import Policy
    from .loader import load
    from .prepare import LiveOptions, PreparedRun, prepare
    from .results.frames import Results
    from .run.fork import fork
    from .run.simulate import simulate
    from .searches import SearchResults, search
    from .sweeps import sensitivity
    from .sweeps.sweep import SweepResults, sweep

# public name -> (module, attribute; None: the module itself)
_LAZY: dict[str, tuple[str, str | None]] = {
    "ArenaConfig": (".config.game", "ArenaConfig"),
    "default_config": (".config.game", "default_config"),
    "Policy": (".kernels.policies", "Policy"),
    "Results": (".results.frames", "Results"),
    "simulate": (".run.simulate", "simulate"),
    "fork": (".run.fork", "fork"),
    "SweepResults": (".sweeps.sweep", "SweepResults"),
    "sweep": (".sweeps.sweep", "sweep"),
    "LiveOptions": (".prepare", "LiveOptions"),
    "PreparedRun": (".prepare", "PreparedRun"),
    "prepare": (".prepare", None),  # the package: bdpd_jax.prepare.prepare(config) -> PreparedRun
    "kernels": (".kernels", None),
    "lab": (".lab", None),
    "sensitivity": (".sweeps.sensitivity", None),
    "SearchResults": (".searches", "SearchResults"),
    "search": (".searches", "search"),
    "scenarios": (".scenarios", None),
    "load": (".loader", "load"),
}


def __getattr__(name: str) -> Any:
    spec = _LAZY.get(name)
    if spec is None:
        raise AttributeError(f"module 'bdpd_jax' has no attribute {name!r}")
    module = importlib.import_module(spec[0], __name__)
    value = module if spec[1] is None else getattr(module, spec[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "ArenaConfig",
    "configure",
    "LiveOptions",
    "Policy",
    "PreparedRun",
    "Results",
    "SearchResults",
    "SweepResults",
    "default_config",
    "fork",
    "kernels",
    "lab",
    "load",
    "prepare",
    "scenarios",
    "search",
    "sensitivity",
    "simulate",
    "sweep",
]
__version__ = "0.1.0"
