"""Governance frames built from the per-turn records of the governance layer."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .kernels.governance import NAME
from .kernels.pacts import PACT_TERM_TYPES

VIOLATION_COLUMNS = ("arena", "turn", "player", "pact", "termType", "ordinal")


def layer_record(extra: dict, name: str) -> dict | None:
    """A layer's end-of-turn record (``record.extra[name]["end"]``), None when empty."""
    return (extra.get(name) or {}).get("end") or None


def violations_frame(rec: dict, arenas: np.ndarray) -> pd.DataFrame:
    """One row per violation event {partyId, pactId, termType} (001_*), with its ordinal
    among the (player, termType) violations. violated leaves: (T, P, N, B)."""
    g = layer_record(rec["extra"], NAME)
    if g is None:
        return pd.DataFrame({c: [] for c in VIOLATION_COLUMNS})
    viol = g["violated"] & rec["played"][:, None, None, :]
    t, p, n, b = np.nonzero(viol)
    terms = np.asarray(PACT_TERM_TYPES, dtype=object)
    return pd.DataFrame({
        "arena": arenas[b],
        "turn": rec["turn"][t, b],
        "player": n.astype(np.int32),
        "pact": p.astype(np.int32),
        "termType": terms[g["term"][t, p, b]],
        "ordinal": g["ordinal"][t, p, n, b].astype(np.int32),
    }).sort_values(["arena", "turn", "pact", "player"], ignore_index=True)
