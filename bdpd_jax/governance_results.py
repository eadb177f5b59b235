"""Governance frames built from the per-turn records of the governance layer."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .kernels.governance import NAME
from .kernels import pacts as P

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
    terms = np.asarray(P.term_names(), dtype=object)
    return pd.DataFrame({
        "arena": arenas[b],
        "turn": rec["turn"][t, b],
        "player": n.astype(np.int32),
        "pact": p.astype(np.int32),
        "termType": terms[g["term"][t, p, b]],
        "ordinal": g["ordinal"][t, p, n, b].astype(np.int32),
    }).sort_values(["arena", "turn", "pact", "player"], ignore_index=True)


SANCTION_COLUMNS = ("arena", "turn", "id", "type", "player", "pact", "termType", "ordinal", "amount", "reason",
                    "payer", "cost")


def sanctions_frame(rec: dict, arenas: np.ndarray, specs: list) -> pd.DataFrame:
    """One row per sanction fired: which spec (``id``, ``type``, ``reason``) charged which
    violation event (``player``, ``pact`` slot, ``termType``, ``ordinal``) how much
    (``amount``). ``payer`` / ``cost``: who paid a cost to impose it (-1 / 0 for the
    automatic specs of 000_* 2.4). spec_fired leaves: (T, K, P, N, B); ``specs`` in the
    order the governance layer compiled them (governance_build.sanction_specs)."""
    g = layer_record(rec["extra"], NAME)
    if g is None or "spec_fired" not in g:
        return pd.DataFrame({c: [] for c in SANCTION_COLUMNS})
    fired = g["spec_fired"] & rec["played"][:, None, None, None, :]
    t, k, p, n, b = np.nonzero(fired)
    terms = np.asarray(P.term_names(), dtype=object)
    ids = np.asarray([s.id for s in specs] + [None], dtype=object)
    types = np.asarray([s.type for s in specs] + [None], dtype=object)
    reasons = np.asarray([getattr(s.payload, "reason", None) for s in specs] + [None], dtype=object)
    k_ = np.minimum(k, len(specs))  # padding specs never fire; guards the lookup
    return pd.DataFrame({
        "arena": arenas[b],
        "turn": rec["turn"][t, b],
        "id": ids[k_],
        "type": types[k_],
        "player": n.astype(np.int32),
        "pact": p.astype(np.int32),
        "termType": terms[g["term"][t, p, b]],
        "ordinal": g["ordinal"][t, p, n, b].astype(np.int32),
        "amount": g["spec_amount"][t, k, p, n, b].astype(float),
        "reason": reasons[k_],
        "payer": np.full(len(t), -1, np.int32),
        "cost": np.zeros(len(t)),
    }).sort_values(["arena", "turn", "pact", "player", "id"], ignore_index=True)
