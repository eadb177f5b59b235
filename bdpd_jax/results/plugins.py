"""``Results.governance_actions``: the governance agents' applied actions, one row per
mandate taken (kernels/governance_agent.py), read from the plugin layer's begin records."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..kernels.governance_agent import GovAction
from ..kernels.plugins import NAME
from . import schema

COLUMNS = schema.names(schema.GOVERNANCE_ACTIONS)


def governance_actions_frame(rec: dict, arenas: np.ndarray, plugins: list) -> pd.DataFrame:
    """One row per (arena, turn, plugin, action) applied at the start of ``turn``: ``action``
    is ``cap`` (value: the maxHarvest of the regulator's pact binding all; inf: lifted),
    ``ladder_scale`` (the factor on every sanction amount) or ``regen`` (the regen_set value).
    rec: flattened TurnRecord (numpy); leaves (T, B)."""
    begun = ((rec["extra"].get(NAME) or {}).get("begin") or {}).get("actions") or ()
    frames = []
    for spec, a in zip(plugins, begun, strict=False):
        if a is None:
            continue
        for field in GovAction._fields:
            v = np.asarray(a[GovAction._fields.index(field)], float)
            t, b = np.nonzero(~np.isnan(v) & np.asarray(rec["played"]))
            frames.append(
                schema.frame(
                    schema.GOVERNANCE_ACTIONS,
                    {
                        "arena": arenas[b],
                        "turn": np.asarray(rec["turn"])[t, b].astype(np.int32),
                        "id": spec.id,
                        "type": spec.type,
                        "action": field,
                        "value": v[t, b],
                    },
                )
            )
    frames = [f for f in frames if len(f)]
    if not frames:
        return schema.empty_frame(schema.GOVERNANCE_ACTIONS)
    out = pd.concat(frames, ignore_index=True)
    order = {f: i for i, f in enumerate(GovAction._fields)}
    out["_o"] = out["action"].map(order)
    return out.sort_values(["arena", "turn", "id", "_o"], ignore_index=True).drop(columns="_o")
