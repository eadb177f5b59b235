"""Engine registry. Adding an engine: one file here plus one import line below."""

from . import (
    logistic,  # noqa: F401  (registers "logistic")
    seneca,  # noqa: F401  (registers "seneca")
)
from .base import ENGINES, Engine, get_engine, register

__all__ = ["ENGINES", "Engine", "get_engine", "register"]
