"""One turn record of a live arena (a line of ``turns.jsonl``, 004_* A.1).

:func:`turn_record` is the body of ``Arena._record``: the decisions (with the external
agents' calls), the turn's messages, tool results, pacts, violations, sanctions, errors,
metrics and perturbations; it updates the arena's per-player counts for ``summary.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from bdpd_jax.kernels import pacts as P
from bdpd_jax.kernels import perturb as pk
from bdpd_jax.governance_build import sanction_specs
from bdpd_jax.kernels.plugins import NAME as PLUGINS
from bdpd_jax.plugins import reason_name
from bdpd_jax.kernels.governance import NAME as GOV
from bdpd_jax.governance_results import layer_record
from bdpd_jax.perturb_results import perturb_record, target_label
from bdpd_jax.host.agents.base import AgentResult
from bdpd_jax.host.registry import num, num_dict, nums

if TYPE_CHECKING:
    from bdpd_jax.host.arena import Arena


def sanction_rows(arena: Arena, t: int, g: dict, rec_extra: dict) -> list[dict[str, Any]]:
    """One row per sanction fired this turn, with its provenance: the spec (``specId``,
    ``type``, ``reason``), the violation event (``playerId``, ``pactId``, ``termType``,
    ``ordinal``), the ``amount`` and who paid a cost to impose it (``paidBy`` / ``cost``:
    null / 0 for the automatic specs of 000_* 2.4)."""
    specs = sanction_specs(arena.config)
    if not g:
        return plugin_sanction_rows(arena, t, layer_record(rec_extra, PLUGINS) or {})
    fired = np.asarray(g["spec_fired"])
    amount = np.asarray(g["spec_amount"])
    rows = []
    for n, p, k in zip(*np.nonzero(fired.transpose(2, 1, 0))):  # by player, pact, spec
        sp = specs[k]
        rows.append({"turn": int(t), "specId": sp.id, "type": sp.type, "playerId": arena.players[int(n)],
                     "pactId": arena.registry.id_of(int(p)), "termType": P.term_names()[int(g["term"][p])],
                     "ordinal": int(g["ordinal"][p, n]), "amount": num(amount[k, p, n]),
                     "reason": sp.payload.reason, "paidBy": None, "cost": 0.0})
    return rows + plugin_sanction_rows(arena, t, layer_record(rec_extra, PLUGINS) or {})


def plugin_sanction_rows(arena: Arena, t: int, g: dict) -> list[dict[str, Any]]:
    """The governance plugins' sanctions of this turn: who (``paidBy``, ``cost``) fined whom."""
    rows = []
    for spec, r in zip(arena.config.plugins, g.get("plugins", ())):
        fines, costs = np.asarray(r["fines"]), np.asarray(r["costs"])  # [payer, target]
        for i, j in zip(*np.nonzero(((fines > 0) | (costs > 0)).T)):  # by target, then payer
            rows.append({"turn": int(t), "specId": spec.id, "type": spec.type, "playerId": arena.players[int(i)],
                         "pactId": None, "termType": None, "ordinal": 0, "amount": num(fines[j, i]),
                         "reason": reason_name(spec.type, int(r["reason"][i])),
                         "paidBy": arena.players[int(j)], "cost": num(costs[j, i])})
    return rows


def turn_record(arena: Arena, t: int, rec, calls: dict[int, AgentResult], tools: list,
                overridden: set) -> dict[str, Any]:
    """The record of turn ``t`` from the kernel's (unbatched) turn record ``rec``."""
    players = arena.players
    decisions = []
    errors = []
    cols = {k: nums(getattr(rec, k)) for k in ("requested", "actual", "announced", "wealth", "sanction")}
    invalid = np.asarray(rec.invalid).tolist()
    for i, s in enumerate(arena.specs):
        d = {"playerId": s.name, "agentType": arena.agent_kind(i), "requested": cols["requested"][i],
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
        sanctions = sanction_rows(arena, t, g, rec.extra)
        for i, p in enumerate(players):
            arena._stats[p]["sanctions"] += float(rec.sanction[i])
    fired = []
    pr = perturb_record(rec.extra) if isinstance(rec.extra, dict) else None
    if pr:
        for p in np.flatnonzero(np.asarray(pr["fired"])):
            kind = pk.type_names()[int(pr["code"][p])]
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
