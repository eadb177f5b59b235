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
from bdpd_jax.host.registry import num, num_dict, nums

if TYPE_CHECKING:
    from bdpd_jax.host.arena import Arena


def turn_record(arena: Arena, t: int, rec, calls: dict[int, AgentResult], tools: list,
                overridden: set) -> dict[str, Any]:
    """The record of turn ``t`` from the kernel's (unbatched) turn record ``rec``."""
    players = arena.players
    decisions = []
    errors = []
    cols = {k: nums(getattr(rec, k)) for k in ("requested", "actual", "announced", "wealth", "sanction")}
    invalid = np.asarray(rec.invalid).tolist()
    for i, s in enumerate(arena.specs):
        d = {"playerId": s.name, "agentType": s.agentType, "requested": cols["requested"][i],
             "actual": cols["actual"][i], "announced": cols["announced"][i], "wealth": cols["wealth"][i],
             "sanction": cols["sanction"][i], "invalid": bool(invalid[i])}
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
        arena._stats[s.name]["totalHarvest"] += d["actual"] or 0.0
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
    top = num_dict({"stock": rec.stock, "regen": rec.regen, "reserveDrawn": rec.reserve_drawn})
    return {
        "arenaId": arena.arena_id, "turn": t, **top, "collapsed": bool(rec.collapsed),
        "decisions": decisions,
        "messages": arena.bus.messages_for_turn(t),
        "tools": tools,
        "pacts": arena.registry.compact() if arena.registry is not None else [],
        "violations": violations,
        "sanctions": sanctions,
        "errors": errors,
        "metrics": num_dict(rec.metrics),
        "engine": {k: num(v) for k, v in rec.engine_extra.items() if np.asarray(v).dtype.kind == "f"},
        "perturbations": fired,
        "ownerPerturbations": owner,
    }


def tool_results(arena: Arena, player: str, turn: int) -> list[dict[str, Any]]:
    """003_*: what ``player``'s tool calls of turn ``turn - 1`` returned (``{ok, scope, tool,
    ...}`` each, refusals included; actions its agent dropped as malformed add one
    ``{ok: false, scope: "none", tool: null, reason}`` with the agent's error text)."""
    last = arena.records[-1] if arena.records else None
    if last is None or last["turn"] != turn - 1:
        return []
    out = [t["result"] for t in last["tools"] if t["playerId"] == player]
    for d in last["decisions"]:
        if d["playerId"] == player and d.get("error") and "dropped" in d["error"]:
            out.append({"ok": False, "scope": "none", "tool": None, "reason": d["error"]})
    return out


__all__ = ["turn_record", "tool_results"]
