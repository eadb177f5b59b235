"""The ``Results.perturbations`` frame: one row per firing (arena, turn, id, type, target, value).

``target`` names what was acted on: ``regen_rate``, ``capacity``, ``threshold``, ``stock``,
``wealth[i]`` / ``wealth[*]``, ``strategy[i]`` / ``strategy[*]``, ``visible[<variable>]``.
``value`` is the acted-on quantity after the firing: the new rate, capacity, threshold or
stock, the targets' total wealth, the new visibility (1.0 / 0.0), or for a strategy
override the index of the new strategy (its name is in ``strategy``). The rows come out of
the perturbation layer's records through :func:`decode.perturbation_columns`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import decode, schema

COLUMNS = schema.names(schema.PERTURBATIONS)


def perturbations_frame(rec: dict, arenas: np.ndarray, ids: list[str], policy_names: list[str]) -> pd.DataFrame:
    """rec: flattened TurnRecord (numpy); the layer's leaves have shape (T, P, B)."""
    cols = decode.perturbation_columns(rec, arenas, ids, policy_names)
    return schema.empty_frame(schema.PERTURBATIONS) if cols is None else schema.frame(schema.PERTURBATIONS, cols)
