"""The engines' config models: the registry (``base``: ``EngineConfig``, ``register_engine``,
``engine_config_model``, read when called) and the shipped engines' models, each in its own
module that imports ``base`` only; importing the package registers them."""

from __future__ import annotations

from . import (
    govsim,  # noqa: F401  (registers "govsim"'s config model)
    logistic,  # noqa: F401  (registers "logistic"'s config model)
    seneca,  # noqa: F401  (registers "seneca"'s config model)
)
from .base import (
    ENGINE_CONFIGS,
    STRICT,
    EngineConfig,
    engine_config_model,
    register_engine,
    register_engine_config,
    unregister_engine,
)

__all__ = [
    "ENGINE_CONFIGS",
    "EngineConfig",
    "STRICT",
    "engine_config_model",
    "register_engine",
    "register_engine_config",
    "unregister_engine",
]
