"""The decoders of the event row kinds, written once, array-first: how the rows of the
``violations``, ``sanctions``, ``perturbations`` and ``governance_actions`` layers
(results/schema.py) come out of a kernel turn record.

A decoder reads a flattened record (``extra``, ``played``, ``turn``: numpy leaves, turn axis
first, batch axis last) and returns the layer's columns by name in index form (a player's
index, a pact's slot, -1 for none), its values in the kernel's dtypes, one entry per row, rows
by arena, then turn, then the kind's own axes (the live record's order). The frames apply the
decoders to a run's records (and cast to the schema's dtypes: :func:`schema.frame`); a live
arena applies the same decoders to its one arena's one turn (:func:`one_turn`: a length-1
slice on both axes) and writes the rows by the schema (:func:`schema.wire_rows`). Every
code -> label of these rows lives here (term types, perturbation types and targets, plugin
reasons), so no rule of decoding is stated twice (docs/semantics/records.md).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from ..config.plugins import reason_name
from ..kernels import pacts as P
from ..kernels import perturb as pk
from ..kernels.governance import NAME as GOV
from ..kernels.governance_agent import GovAction
from ..kernels.params import OBS_VARS
from ..kernels.plugins import NAME as PLUGINS

#: a row kind's decoded columns by name (numpy arrays or lists, one entry per row)
Columns = dict[str, Any]


def layer_record(extra: dict, name: str) -> dict | None:
    """A layer's end-of-turn record (``record.extra[name]["end"]``), None when empty."""
    return (extra.get(name) or {}).get("end") or None


def begin_record(extra: dict, name: str) -> dict | None:
    """A layer's start-of-turn record (``record.extra[name]["begin"]``), None when empty."""
    return (extra.get(name) or {}).get("begin") or None


def one_turn(extra: dict, turn: int) -> dict[str, Any]:
    """One arena's record of one played turn (its layers' leaves without the batch axis) in
    the decoders' layout: each leaf as (1, ..., 1)."""
    return {
        "extra": jax.tree_util.tree_map(lambda x: np.asarray(x)[None, ..., None], extra),
        "played": np.ones((1, 1), bool),
        "turn": np.full((1, 1), turn, np.int32),
    }


def term_labels(codes: np.ndarray) -> np.ndarray:
    """Pact term type codes -> their registered names (kernels.pacts.register_term)."""
    return _labels(tuple(P.term_names()))[np.asarray(codes)]


@functools.lru_cache(maxsize=8)
def _labels(names: tuple[str, ...]) -> np.ndarray:
    """A registry's names as an object array to index by code (one per registry state)."""
    return np.asarray(names, dtype=object)


def type_label(code: Any) -> str:
    """A perturbation type code (an int or a 0-d array) -> its registered name."""
    return pk.type_names()[int(code)]


def target_label(type_: str, target: int) -> str:
    """What a firing acted on, from the type's registered target kind and label."""
    pt = pk.perturbation_type(type_)
    if pt.target == "player":
        return f"{pt.label}[{'*' if target == pk.ALL else str(int(target))}]"
    if pt.target == "variable":
        return f"{pt.label}[{OBS_VARS[int(target)]}]"
    return pt.label


def _played(rec: dict, axes: int) -> np.ndarray:
    """The played mask (T, B) broadcast over a leaf's ``axes`` middle axes."""
    played = np.asarray(rec["played"])
    return played.reshape(played.shape[0], *(1,) * axes, played.shape[1])


def violation_columns(rec: dict, arenas: np.ndarray) -> Columns | None:
    """One row per violation event (001_*): rows by arena, turn, pact, player; None without
    a governance layer. violated leaves: (T, P, N, B)."""
    g = layer_record(rec["extra"], GOV)
    if g is None:
        return None
    b, t, p, n = np.nonzero((np.asarray(g["violated"]) & _played(rec, 2)).transpose(3, 0, 1, 2))
    return {
        "arena": np.asarray(arenas)[b],
        "turn": np.asarray(rec["turn"])[t, b],
        "player": n.astype(np.int32),
        "pact": p.astype(np.int32),
        "term_type": term_labels(np.asarray(g["term"])[t, p, b]),
        "ordinal": np.asarray(g["ordinal"])[t, p, n, b].astype(np.int32),
    }


def _per_spec(specs: Sequence[Any], k: np.ndarray, field: Callable[[Any], Any]) -> np.ndarray:
    """Each row's spec's ``field`` (None past the compiled specs: padding never fires)."""
    return np.asarray([field(s) for s in specs] + [None], dtype=object)[np.minimum(k, len(specs))]


def spec_sanction_columns(rec: dict, arenas: np.ndarray, specs: Sequence[Any]) -> Columns | None:
    """One row per sanction spec fired (000_* 2.4: automatic, payer -1, cost 0): rows by
    arena, turn, player, pact, spec; ``specs`` in the order the governance layer compiled
    them; None when none fired. spec_fired leaves: (T, K, P, N, B)."""
    g = layer_record(rec["extra"], GOV)
    if g is None or "spec_fired" not in g:
        return None
    fired = np.asarray(g["spec_fired"]) & _played(rec, 3)
    if not fired.any():  # (most turns: no table to build)
        return None
    b, t, n, p, k = np.nonzero(fired.transpose(4, 0, 3, 2, 1))
    return {
        "arena": np.asarray(arenas)[b],
        "turn": np.asarray(rec["turn"])[t, b],
        "id": _per_spec(specs, k, lambda s: s.id),
        "type": _per_spec(specs, k, lambda s: s.type),
        "player": n.astype(np.int32),
        "pact": p.astype(np.int32),
        "term_type": term_labels(np.asarray(g["term"])[t, p, b]),
        "ordinal": np.asarray(g["ordinal"])[t, p, n, b].astype(np.int32),
        "amount": np.asarray(g["spec_amount"])[t, k, p, n, b],
        "reason": _per_spec(specs, k, lambda s: getattr(s.payload, "reason", None)),
        "payer": np.full(len(t), -1, np.int32),
        "cost": np.zeros(len(t)),
    }


def plugin_sanction_columns(rec: dict, arenas: np.ndarray, plugins: Sequence[Any]) -> list[Columns]:
    """Per governance plugin that fined or charged anyone, one row per (payer, target) (pact
    -1, ordinal 0): rows by arena, turn, target, payer. fines/costs leaves: (T, N payer,
    N target, B)."""
    g = layer_record(rec["extra"], PLUGINS)
    if g is None:
        return []
    out = []
    for spec, r in zip(plugins, g.get("plugins", ()), strict=False):
        fines, costs = np.asarray(r["fines"]), np.asarray(r["costs"])
        hit = ((fines > 0) | (costs > 0)) & _played(rec, 2)
        if not hit.any():  # a plugin that fined no one adds no block
            continue
        b, t, i, j = np.nonzero(hit.transpose(3, 0, 2, 1))
        reason = np.asarray(r["reason"])[t, i, b]
        out.append(
            {
                "arena": np.asarray(arenas)[b],
                "turn": np.asarray(rec["turn"])[t, b],
                "id": spec.id,
                "type": spec.type,
                "player": i.astype(np.int32),
                "pact": np.full(len(t), -1, np.int32),
                "term_type": None,
                "ordinal": np.zeros(len(t), np.int32),
                "amount": fines[t, j, i, b],
                "reason": [reason_name(spec.type, int(c)) for c in reason],
                "payer": j.astype(np.int32),
                "cost": costs[t, j, i, b],
            }
        )
    return out


def perturbation_columns(
    rec: dict, arenas: np.ndarray, ids: Sequence[str], policy_names: Sequence[str]
) -> Columns | None:
    """One row per perturbation firing (Table A.1): rows by arena, turn, spec slot; a
    strategy override's new strategy named from ``policy_names``. Leaves: (T, P, B)."""
    r = begin_record(rec["extra"], pk.PerturbLayer.name)
    if r is None or not ids:
        return None
    b, t, p = np.nonzero((np.asarray(r["fired"]) & _played(rec, 1)).transpose(2, 0, 1))
    types = [type_label(c) for c in np.asarray(r["code"])[t, p, b]]
    targets = np.asarray(r["target"])[t, p, b]
    values = np.asarray(r["value"])[t, p, b]
    return {
        "arena": np.asarray(arenas)[b],
        "turn": np.asarray(rec["turn"])[t, b].astype(np.int32),
        "id": [ids[int(i)] if i < len(ids) else None for i in p],
        "type": types,
        "target": [target_label(ty, tg) for ty, tg in zip(types, targets, strict=True)],
        "value": values,
        "strategy": [
            policy_names[int(v)] if ty == "strategy_override" and 0 <= int(v) < len(policy_names) else None
            for ty, v in zip(types, values, strict=True)
        ],
    }


def governance_action_columns(rec: dict, arenas: np.ndarray, plugins: Sequence[Any]) -> list[Columns]:
    """Per (governance agent, action field), one row per turn it applied that action
    (kernels/governance_agent.py; NaN: not applied): rows by arena, turn. Leaves: (T, B)."""
    begun = (begin_record(rec["extra"], PLUGINS) or {}).get("actions") or ()
    out = []
    for spec, a in zip(plugins, begun, strict=False):
        if a is None:
            continue
        for field in GovAction._fields:
            v = np.asarray(a[GovAction._fields.index(field)], float)
            b, t = np.nonzero((~np.isnan(v) & np.asarray(rec["played"])).T)
            out.append(
                {
                    "arena": np.asarray(arenas)[b],
                    "turn": np.asarray(rec["turn"])[t, b].astype(np.int32),
                    "id": spec.id,
                    "type": spec.type,
                    "action": field,
                    "value": v[t, b],
                }
            )
    return out


#: the decoders of the event layers, by schema layer name (tests/test_decode.py checks that
#: every event layer has one and that frames and live records go through them)
ROW_KINDS: dict[str, tuple[Callable[..., Any], ...]] = {
    "violations": (violation_columns,),
    "sanctions": (spec_sanction_columns, plugin_sanction_columns),
    "perturbations": (perturbation_columns,),
    "governance_actions": (governance_action_columns,),
}

__all__ = [
    "Columns",
    "ROW_KINDS",
    "layer_record",
    "begin_record",
    "one_turn",
    "term_labels",
    "type_label",
    "target_label",
    "violation_columns",
    "spec_sanction_columns",
    "plugin_sanction_columns",
    "perturbation_columns",
    "governance_action_columns",
]
