"""Engine registry. Adding an engine: one file here plus one import line below."""

from .base import ENGINES, Engine, get_engine, register
from . import logistic  # noqa: F401  (registers "logistic")
from . import seneca  # noqa: F401  (registers "seneca")

__all__ = ["ENGINES", "Engine", "get_engine", "register"]
