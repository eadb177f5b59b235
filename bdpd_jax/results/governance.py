"""Governance frames built from the per-turn records of the governance layer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..kernels import pacts as P
from ..kernels.governance import NAME
from . import schema

VIOLATION_COLUMNS = schema.names(schema.VIOLATIONS)


def layer_record(extra: dict, name: str) -> dict | None:
    """A layer's end-of-turn record (``record.extra[name]["end"]``), None when empty."""
    return (extra.get(name) or {}).get("end") or None


def violations_frame(rec: dict, arenas: np.ndarray) -> pd.DataFrame:
    """One row per violation event {partyId, pactId, termType} (001_*), with its ordinal
    among the (player, termType) violations. violated leaves: (T, P, N, B)."""
    g = layer_record(rec["extra"], NAME)
    if g is None:
        return schema.empty_frame(schema.VIOLATIONS)
    viol = g["violated"] & rec["played"][:, None, None, :]
    t, p, n, b = np.nonzero(viol)
    terms = np.asarray(P.term_names(), dtype=object)
    return schema.frame(
        schema.VIOLATIONS,
        {
            "arena": arenas[b],
            "turn": rec["turn"][t, b],
            "player": n.astype(np.int32),
            "pact": p.astype(np.int32),
            "term_type": terms[g["term"][t, p, b]],
            "ordinal": g["ordinal"][t, p, n, b].astype(np.int32),
        },
    ).sort_values(["arena", "turn", "pact", "player"], ignore_index=True)


SANCTION_COLUMNS = schema.names(schema.SANCTIONS)


def sanctions_frame(rec: dict, arenas: np.ndarray, specs: list, plugins: Sequence[Any] = ()) -> pd.DataFrame:
    """One row per sanction fired: which spec or plugin (``id``, ``type``, ``reason``)
    charged which player (``player``) how much (``amount``); for a spec also the violation
    event (``pact`` slot, ``term_type``, ``ordinal``), for a plugin who imposed it (``payer``)
    and what that cost them (``cost``). Automatic specs: payer -1, cost 0; plugins: pact -1,
    ordinal 0. spec_fired leaves: (T, K, P, N, B); ``specs`` in the order the governance
    layer compiled them (governance_build.sanction_specs), ``plugins`` the config's."""
    frames = [_spec_rows(rec, arenas, specs), _plugin_rows(rec, arenas, plugins)]
    frames = [f for f in frames if len(f)]
    if not frames:
        return schema.empty_frame(schema.SANCTIONS)
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return out.sort_values(["arena", "turn", "player", "pact", "id", "payer"], ignore_index=True)


def _spec_rows(rec: dict, arenas: np.ndarray, specs: list) -> pd.DataFrame:
    g = layer_record(rec["extra"], NAME)
    if g is None or "spec_fired" not in g:
        return pd.DataFrame()
    fired = g["spec_fired"] & rec["played"][:, None, None, None, :]
    t, k, p, n, b = np.nonzero(fired)
    terms = np.asarray(P.term_names(), dtype=object)
    k_ = np.minimum(k, len(specs))  # padding specs never fire; guards the lookup
    pick = lambda f: np.asarray([f(s) for s in specs] + [None], dtype=object)[k_]  # noqa: E731
    return schema.frame(
        schema.SANCTIONS,
        {
            "arena": arenas[b],
            "turn": rec["turn"][t, b],
            "id": pick(lambda s: s.id),
            "type": pick(lambda s: s.type),
            "player": n.astype(np.int32),
            "pact": p.astype(np.int32),
            "term_type": terms[g["term"][t, p, b]],
            "ordinal": g["ordinal"][t, p, n, b].astype(np.int32),
            "amount": g["spec_amount"][t, k, p, n, b].astype(float),
            "reason": pick(lambda s: getattr(s.payload, "reason", None)),
            "payer": np.full(len(t), -1, np.int32),
            "cost": np.zeros(len(t)),
        },
    )


def _plugin_rows(rec: dict, arenas: np.ndarray, plugins: Sequence[Any]) -> pd.DataFrame:
    from ..config.plugins import reason_name
    from ..kernels.plugins import NAME as PLUGINS

    g = layer_record(rec["extra"], PLUGINS)
    if g is None:
        return pd.DataFrame()
    rows = []
    for spec, r in zip(plugins, g["plugins"], strict=True):
        fines, costs = np.asarray(r["fines"]), np.asarray(r["costs"])  # (T, N, N, B): [.., payer, target, ..]
        hit = ((fines > 0) | (costs > 0)) & rec["played"][:, None, None, :]
        t, j, i, b = np.nonzero(hit)
        reason = np.asarray(r["reason"])[t, i, b]
        rows.append(
            schema.frame(
                schema.SANCTIONS,
                {
                    "arena": arenas[b],
                    "turn": rec["turn"][t, b],
                    "id": spec.id,
                    "type": spec.type,
                    "player": i.astype(np.int32),
                    "pact": np.full(len(t), -1, np.int32),
                    "term_type": None,
                    "ordinal": np.zeros(len(t), np.int32),
                    "amount": fines[t, j, i, b].astype(float),
                    "reason": [reason_name(spec.type, int(c)) for c in reason],
                    "payer": j.astype(np.int32),
                    "cost": costs[t, j, i, b].astype(float),
                },
            )
        )
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
