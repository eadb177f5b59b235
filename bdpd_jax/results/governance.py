"""Governance frames (violations, sanctions) built from the governance layer's per-turn
records through the row kinds' decoders (results/decode.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from . import decode, schema

VIOLATION_COLUMNS = schema.names(schema.VIOLATIONS)


def violations_frame(rec: dict, arenas: np.ndarray) -> pd.DataFrame:
    """One row per violation event {partyId, pactId, termType} (001_*), with its ordinal
    among the (player, termType) violations (:func:`decode.violation_columns`)."""
    cols = decode.violation_columns(rec, arenas)
    if cols is None:
        return schema.empty_frame(schema.VIOLATIONS)
    return schema.frame(schema.VIOLATIONS, cols).sort_values(["arena", "turn", "pact", "player"], ignore_index=True)


SANCTION_COLUMNS = schema.names(schema.SANCTIONS)


def sanctions_frame(rec: dict, arenas: np.ndarray, specs: list, plugins: Sequence[Any] = ()) -> pd.DataFrame:
    """One row per sanction fired: which spec or plugin (``id``, ``type``, ``reason``)
    charged which player (``player``) how much (``amount``); for a spec also the violation
    event (``pact`` slot, ``term_type``, ``ordinal``), for a plugin who imposed it (``payer``)
    and what that cost them (``cost``). Automatic specs: payer -1, cost 0; plugins: pact -1,
    ordinal 0 (:func:`decode.spec_sanction_columns`, :func:`decode.plugin_sanction_columns`).
    ``specs`` in the order the governance layer compiled them, ``plugins`` the config's."""
    spec_cols = decode.spec_sanction_columns(rec, arenas, specs)
    by_plugin = [schema.frame(schema.SANCTIONS, c) for c in decode.plugin_sanction_columns(rec, arenas, plugins)]
    frames = [
        schema.frame(schema.SANCTIONS, spec_cols) if spec_cols is not None else pd.DataFrame(),
        pd.concat(by_plugin, ignore_index=True) if by_plugin else pd.DataFrame(),
    ]
    frames = [f for f in frames if len(f)]
    if not frames:
        return schema.empty_frame(schema.SANCTIONS)
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return out.sort_values(["arena", "turn", "player", "pact", "id", "payer"], ignore_index=True)
