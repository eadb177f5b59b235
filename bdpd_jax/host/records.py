"""One turn record of a live arena (a line of ``turns.jsonl``, 004_* A.1).

:func:`turn_record` is the body of ``Arena._record``: the decisions (with the external
agents' calls), the turn's messages, tool results, pacts, violations, sanctions, errors,
metrics and perturbations; it updates the arena's per-player counts for ``summary.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from bdpd_jax.kernels import perturb as pk
from bdpd_jax.kernels.governance import NAME as GOV
from bdpd_jax.governance_results import layer_record
from bdpd_jax.perturb_results import perturb_record, target_label
from bdpd_jax.host.agents.base import AgentResult
from bdpd_jax.host.registry import num

if TYPE_CHECKING:
    from bdpd_jax.host.arena import Arena


def turn_record(arena: Arena, t: int, rec, calls: dict[int, AgentResult], tools: list,
                overridden: set) -> dict[str, Any]:
    """The record of turn ``t`` from the kernel's (unbatched) turn record ``rec``."""
    players = arena.players
    decisions = []
    errors = []
    for i, s in enumerate(arena.specs):
        d = {"playerId": s.name, "agentType": arena.agent_kind(i), "requested": num(rec.requested[i]),
             "actual": num(rec.actual[i]), "announced": num(rec.announced[i]), "wealth": num(rec.wealth[i]),
             "sanction": num(rec.sanction[i]), "invalid": bool(rec.invalid[i])}
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
    g = layer_record(rec.extra, GOV)
    if arena.registry is not None and g:
        violations = arena.registry.record_violations(t, np.asarray(g["violated"]), np.asarray(rec.actual),
                                                     np.asarray(g["ordinal"]), np.asarray(g["fired"]))
        for ev in violations:
            arena._stats[ev["partyId"]]["violations"] += 1
        for i, p in enumerate(players):
            if rec.sanction[i] > 0 or g["fired"][i] > 0:
                sanctions.append({"playerId": p, "amount": num(rec.sanction[i]), "fired": int(g["fired"][i])})
                arena._stats[p]["sanctions"] += float(rec.sanction[i])
    fired = []
    pr = perturb_record(rec.extra) if isinstance(rec.extra, dict) else None
    if pr:
        for p in np.flatnonzero(np.asarray(pr["fired"])):
            kind = pk.TYPES[int(pr["code"][p])]
            fired.append({"id": arena._spec_ids[p] if p < len(arena._spec_ids) else None, "type": kind,
                          "target": target_label(kind, int(pr["target"][p])), "value": num(pr["value"][p])})
    owner, arena._owner_fired = arena._owner_fired, []
    return {
        "arenaId": arena.arena_id, "turn": t, "stock": num(rec.stock), "regen": num(rec.regen),
        "reserveDrawn": num(rec.reserve_drawn), "collapsed": bool(rec.collapsed),
        "decisions": decisions,
        "messages": arena.bus.messages_for_turn(t),
        "tools": tools,
        "pacts": arena.registry.compact() if arena.registry is not None else [],
        "violations": violations,
        "sanctions": sanctions,
        "errors": errors,
        "metrics": {k: num(v) for k, v in rec.metrics.items()},
        "perturbations": fired,
        "ownerPerturbations": owner,
    }


__all__ = ["turn_record"]
