"""Engine registry. Adding an engine: one file here plus its config model (bdpd_jax/config/engines/);
the shipped ones are imported below, any other registers itself with ``register``."""

from .base import ENGINES, Engine, get_engine, register
from . import logistic  # noqa: F401  (registers "logistic")
from . import seneca  # noqa: F401  (registers "seneca")
from . import govsim  # noqa: F401  (registers "govsim")

__all__ = ["ENGINES", "Engine", "get_engine", "register"]
