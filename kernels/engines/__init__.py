"""Engine registry. Adding an engine: one file here plus its config model (bdpd_jax/config/engines/);
the shipped ones are imported below, any other registers itself with ``register``."""

from . import (
    govsim,  # noqa: F401  (registers "govsim")
    logistic,  # noqa: F401  (registers "logistic")
    seneca,  # noqa: F401  (registers "seneca")
)
from .base import ENGINES, Engine, get_engine, register

__all__ = ["ENGINES", "Engine", "get_engine", "register"]
