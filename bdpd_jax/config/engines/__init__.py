"""The engines' config models: the registry (``base``: ``EngineConfig``, ``register_engine``,
``engine_config_model``, read when called) and the shipped engines' models, each in its own
module that imports ``base`` only; importing the package registers them."""

from __future__ import annotations

from . import (
    base,
    govsim,  # noqa: F401  (registers "govsim"'s config model)
    logistic,  # noqa: F401  (registers "logistic"'s config model)
    seneca,  # noqa: F401  (registers "seneca"'s config model)
)
from .base import *  # noqa: F403  (the registry, re-exported: its public names are listed once, in base)

__all__ = base.__all__
