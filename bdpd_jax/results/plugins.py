"""``Results.governance_actions``: the governance agents' applied actions, one row per
mandate taken (kernels/governance_agent.py), read from the plugin layer's begin records
through :func:`decode.governance_action_columns`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..kernels.governance_agent import GovAction
from . import decode, schema

COLUMNS = schema.names(schema.GOVERNANCE_ACTIONS)


def governance_actions_frame(rec: dict, arenas: np.ndarray, plugins: list) -> pd.DataFrame:
    """One row per (arena, turn, plugin, action) applied at the start of ``turn``: ``action``
    is ``cap`` (value: the maxHarvest of the regulator's pact binding all; inf: lifted),
    ``ladder_scale`` (the factor on every sanction amount) or ``regen`` (the regen_set value).
    rec: flattened TurnRecord (numpy); leaves (T, B)."""
    frames = [
        schema.frame(schema.GOVERNANCE_ACTIONS, c) for c in decode.governance_action_columns(rec, arenas, plugins)
    ]
    frames = [f for f in frames if len(f)]
    if not frames:
        return schema.empty_frame(schema.GOVERNANCE_ACTIONS)
    out = pd.concat(frames, ignore_index=True)
    order = {f: i for i, f in enumerate(GovAction._fields)}
    out["_o"] = out["action"].map(order)
    return out.sort_values(["arena", "turn", "id", "_o"], ignore_index=True).drop(columns="_o")
