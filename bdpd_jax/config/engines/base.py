"""The config side of the engine registry: the base of an engine's config model and the
registry of config models per engine name, read when called.

An engine is one kernel file (``kernels/engines/<name>.py``, pure JAX) plus one config model
(a pydantic model of the engine's own fields of the ``model`` block: names, defaults,
bounds), registered here under the engine's name. ``ModelConfig`` validates the fields every
engine shares and holds the model registered for ``engineMode`` as its typed ``engine`` field.
The engine modules import this module only; the package imports them (no cycle).
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

from ...kernels.engines import ENGINES, Engine, register
from ...kernels.registry import Registry
from ..base import ConfigModel
from ..limits import check_at_most

#: what every engine config model starts from: unknown keys rejected, finite numbers only
STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)


class EngineConfig(ConfigModel):
    """Base of an engine's config model. ``check_players`` is the hook for checks that need
    the players list too (e.g. Seneca's harvest scale); the default accepts everything."""

    model_config = STRICT

    def check_players(self, players: list[Any]) -> None:
        """Raise ValueError when this engine part cannot run with ``players`` (PlayerConfig list)."""


def check_threshold_within_capacity(model: Any) -> None:
    """A capped-stock engine's (kernels.engines.base.CappedStock) ``threshold`` lies within its
    ``commonsCapacity``: ValueError naming both otherwise."""
    check_at_most(
        model.threshold,
        "model.threshold",
        model.commons_capacity,
        "commonsCapacity",
        " (the commons would count as collapsed at any stock it can hold)",
    )


#: config model per engine name (the config's ``engineMode``): the config side of the engine
#: registry (kernels/registry.py); the kernel side is kernels.engines.ENGINES
ENGINE_CONFIGS: Registry[type[EngineConfig]] = Registry("model.engineMode", "engine config model")


def register_engine_config(name: str, model: type[EngineConfig]) -> type[EngineConfig]:
    """Register ``model`` as the config model of engine ``name`` (again: replaced)."""
    return ENGINE_CONFIGS.register(name, model, replace=True)


def register_engine(engine: Engine, model: type[EngineConfig]) -> Engine:
    """Register a kernel engine and its config model in one call (a new engine in one file)."""
    register(engine)
    register_engine_config(engine.name, model)
    return engine


def unregister_engine(name: str) -> None:
    """Undo :func:`register_engine` for the last registered engine (tests that must leave the
    registries as they found them)."""
    ENGINE_CONFIGS.unregister(name)
    ENGINES.unregister(name)


def engine_config_model(name: str) -> type[EngineConfig]:
    """The config model of engine ``name`` (the registry read now); ValueError naming the field."""
    return ENGINE_CONFIGS.get_entry(name)


__all__ = [
    "ENGINE_CONFIGS",
    "EngineConfig",
    "STRICT",
    "engine_config_model",
    "register_engine",
    "register_engine_config",
    "unregister_engine",
]
