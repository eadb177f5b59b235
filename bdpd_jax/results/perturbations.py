"""The ``Results.perturbations`` frame: one row per firing (arena, turn, id, type, target, value).

``target`` names what was acted on: ``regen_rate``, ``capacity``, ``threshold``, ``stock``,
``wealth[i]`` / ``wealth[*]``, ``strategy[i]`` / ``strategy[*]``, ``visible[<variable>]``.
``value`` is the acted-on quantity after the firing: the new rate, capacity, threshold or
stock, the targets' total wealth, the new visibility (1.0 / 0.0), or for a strategy
override the index of the new strategy (its name is in ``strategy``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..kernels import perturb as pk
from ..kernels.params import OBS_VARS
from . import schema

COLUMNS = schema.names(schema.PERTURBATIONS)


def target_label(type_: str, target: int) -> str:
    """What a firing acted on, from the type's registered target kind and label."""
    pt = pk.perturbation_type(type_)
    if pt.target == "player":
        return f"{pt.label}[{'*' if target == pk.ALL else str(int(target))}]"
    if pt.target == "variable":
        return f"{pt.label}[{OBS_VARS[int(target)]}]"
    return pt.label


def perturb_record(extra: dict) -> dict | None:
    return (extra.get(pk.PerturbLayer.name) or {}).get("begin") or None


def perturbations_frame(rec: dict, arenas: np.ndarray, ids: list[str], policy_names: list[str]) -> pd.DataFrame:
    """rec: flattened TurnRecord (numpy); the layer's leaves have shape (T, P, B)."""
    r = perturb_record(rec["extra"])
    if r is None or not ids:
        return schema.empty_frame(schema.PERTURBATIONS)
    fired = np.asarray(r["fired"]) & np.asarray(rec["played"])[:, None, :]
    t, p, b = np.nonzero(fired)
    order = np.lexsort((p, t, b))  # by arena, then turn, then list order
    t, p, b = t[order], p[order], b[order]
    codes = np.asarray(r["code"])[t, p, b]
    targets = np.asarray(r["target"])[t, p, b]
    values = np.asarray(r["value"])[t, p, b].astype(float)
    types = [pk.type_names()[int(c)] for c in codes]
    strategies = [
        policy_names[int(v)] if ty == "strategy_override" and 0 <= int(v) < len(policy_names) else None
        for ty, v in zip(types, values, strict=True)
    ]
    return schema.frame(
        schema.PERTURBATIONS,
        {
            "arena": arenas[b],
            "turn": np.asarray(rec["turn"])[t, b].astype(np.int32),
            "id": [ids[int(i)] for i in p],
            "type": types,
            "target": [target_label(ty, tg) for ty, tg in zip(types, targets, strict=True)],
            "value": values,
            "strategy": strategies,
        },
    )
