"""Pure array kernels of the BDPD arena, written for one arena and batched at the edge.

No I/O, no host imports, no Python objects per arena: engines, observability, schedulers,
policies, metrics and the turn. Installed as ``bdpd_jax.kernels``.
"""

from . import engines, metrics, observe, policies, rng, schedule
from .game import Game
from .params import OBS_VARS, ObsParams, Params, PlayerParams
from .policies import BUILTINS, Policy
from .state import ArenaState, TurnRecord
from .turn import act, decide, decide_phase, play, step, step_phase

__all__ = [
    "ArenaState",
    "BUILTINS",
    "Game",
    "OBS_VARS",
    "ObsParams",
    "Params",
    "PlayerParams",
    "Policy",
    "TurnRecord",
    "act",
    "decide",
    "decide_phase",
    "engines",
    "metrics",
    "observe",
    "play",
    "policies",
    "rng",
    "schedule",
    "step",
    "step_phase",
]
