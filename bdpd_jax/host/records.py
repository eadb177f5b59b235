"""One turn record of a live arena (a line of ``turns.jsonl``, 004_* A.1).

:func:`turn_record` is the body of ``Arena._record``: the decisions (with the external
agents' calls), the turn's messages, tool results, pacts, violations, sanctions, errors,
metrics and perturbations; it updates the arena's per-player counts for ``summary.json``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from bdpd_jax.kernels import perturb as pk
from bdpd_jax.kernels.governance import NAME as GOV
from bdpd_jax.governance_results import layer_record
from bdpd_jax.perturb_results import perturb_record, target_label
from bdpd_jax.host.agents.base import AgentResult
from bdpd_jax.host.registry import num, nums

if TYPE_CHECKING:
    from bdpd_jax.host.arena import Arena


_PLAYER_FLOATS = ("requested", "actual", "announced", "wealth", "sanction")
_ARENA_FLOATS = ("stock", "regen", "reserve_drawn")


def record_rows(rec) -> list[SimpleNamespace]:
    """Per arena, the values :func:`turn_record` reads from a batched kernel turn record
    (numpy leaves, batch axis last), converted column by column once per tick (the values of
    :func:`~bdpd_jax.host.registry.num`): floats (None for NaN), bools, ints as Python
    objects, ``extra`` (the layers' records) and ``actual_np`` as numpy slices."""
    nb = np.shape(rec.turn)[-1]
    rows = [SimpleNamespace() for _ in range(nb)]
    for k in _PLAYER_FLOATS:
        for r, v in zip(rows, nums(np.asarray(getattr(rec, k)).T)):  # [N, B] -> per arena [N]
            setattr(r, k, v)
    for k in _ARENA_FLOATS:
        for r, v in zip(rows, nums(getattr(rec, k))):
            setattr(r, k, v)
    invalid = np.asarray(rec.invalid).T.tolist()
    turn, played, collapsed = (np.asarray(x).tolist() for x in (rec.turn, rec.played, rec.collapsed))
    metrics = {k: nums(v) for k, v in rec.metrics.items()}
    actual = np.asarray(rec.actual)
    has_extra = bool(jax.tree_util.tree_leaves(rec.extra))
    for b, r in enumerate(rows):
        r.invalid, r.turn, r.played, r.collapsed = invalid[b], turn[b], played[b], collapsed[b]
        r.metrics = {k: v[b] for k, v in metrics.items()}
        r.actual_np = actual[:, b]
        r.extra = jax.tree_util.tree_map(lambda x: np.asarray(x)[..., b], rec.extra) if has_extra else {}
    return rows


def turn_record(arena: Arena, t: int, rec: SimpleNamespace, calls: dict[int, AgentResult], tools: list,
                overridden: set) -> dict[str, Any]:
    """The record of turn ``t`` from the arena's row of :func:`record_rows`."""
    decisions = []
    errors = []
    for i, s in enumerate(arena.specs):
        d = {"playerId": s.name, "agentType": s.agentType, "requested": rec.requested[i],
             "actual": rec.actual[i], "announced": rec.announced[i], "wealth": rec.wealth[i],
             "sanction": rec.sanction[i], "invalid": rec.invalid[i]}
        if i in calls:
            r = calls[i]
            d.update({"harvest": r.harvest, "fallback": r.fallback, "error": r.error,
                      "elapsedMs": round(r.elapsed_ms, 3), "actions": r.actions})
            if r.error:
                errors.append({"playerId": s.name, "error": r.error})
                arena._stats[s.name]["errors"] += 1
            arena._stats[s.name]["fallbacks"] += int(r.fallback)
        elif i in overridden:
            d["overridden"] = True
        decisions.append(d)
    violations, sanctions = [], []
    g = layer_record(rec.extra, GOV) if rec.extra else None
    if arena.registry is not None and g:
        violations = arena.registry.record_violations(t, np.asarray(g["violated"]), rec.actual_np,
                                                     np.asarray(g["ordinal"]), np.asarray(g["fired"]))
        for ev in violations:
            arena._stats[ev["partyId"]]["violations"] += 1
        for i, p in enumerate(arena.players):
            amount = rec.sanction[i]
            if (amount is not None and amount > 0) or g["fired"][i] > 0:
                sanctions.append({"playerId": p, "amount": amount, "fired": int(g["fired"][i])})
                arena._stats[p]["sanctions"] += float(amount or 0.0)
    fired = []
    pr = perturb_record(rec.extra) if rec.extra and isinstance(rec.extra, dict) else None
    if pr:
        for p in np.flatnonzero(np.asarray(pr["fired"])):
            kind = pk.TYPES[int(pr["code"][p])]
            fired.append({"id": arena._spec_ids[p] if p < len(arena._spec_ids) else None, "type": kind,
                          "target": target_label(kind, int(pr["target"][p])), "value": num(pr["value"][p])})
    owner, arena._owner_fired = arena._owner_fired, []
    return {
        "arenaId": arena.arena_id, "turn": t, "stock": rec.stock, "regen": rec.regen,
        "reserveDrawn": rec.reserve_drawn, "collapsed": rec.collapsed,
        "decisions": decisions,
        "messages": arena.bus.messages_for_turn(t),
        "tools": tools,
        "pacts": arena.registry.compact() if arena.registry is not None else [],
        "violations": violations,
        "sanctions": sanctions,
        "errors": errors,
        "metrics": dict(rec.metrics),
        "perturbations": fired,
        "ownerPerturbations": owner,
    }


__all__ = ["turn_record", "record_rows"]
