"""The six talk tools of a live arena (003_* tool table): one action of one player.

:func:`dispatch_tool` acts on the arena's run state
(:class:`~bdpd_jax.host.live.arena_run.ArenaRun`): messages go on its
:class:`~bdpd_jax.host.live.messages.MessageBus`, pact writes into its
:class:`~bdpd_jax.host.live.registry.PactRegistry`. An invalid action returns ``ok: false`` with a
``reason`` and changes nothing. A player's own actions (during a turn) count against its
:class:`~bdpd_jax.host.agents.tools.ActionBudget`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bdpd_jax.host.agents.tools import MESSAGE_TOOLS, SANCTION_TOOL, TALK_TOOLS, validate_action

if TYPE_CHECKING:
    from bdpd_jax.host.live.arena_run import ArenaRun

# 003_* tool table, column "Scope"
TOOL_SCOPES: dict[str, str] = {
    "broadcast": "all-others",
    "send_private": "one player",
    "announce_intended_harvest": "all-others",
    "propose_pact": "named parties",
    "accept_pact": "proposer + parties",
    "pledge": "self-only",
    "sanction": "one player",
}


def dispatch_tool(
    run: ArenaRun, player: str, action: Any, turn: int | None = None, *, validated: bool = False
) -> dict[str, Any]:
    """Run one tool action of ``player`` at ``turn`` (default: the arena's next turn).

    ``validated``: the action is already ``tools.validate_action``'s output (an agent parsed
    the player's answer with it), so it is not checked again; an owner's raw action is checked
    here. Either way an action is validated once; the arena-level rules (known player, tool
    offered, budget, pact rules) are checked here."""
    turn = run.turn + 1 if turn is None else int(turn)
    tool = action.get("tool") if isinstance(action, dict) else None
    scope = TOOL_SCOPES.get(tool, "none") if isinstance(tool, str) else "none"
    if player not in run.players:
        return _no(scope, tool, f"playerId: unknown player {player!r}")
    if tool != SANCTION_TOOL and tool not in TALK_TOOLS:
        return _no(scope, tool, f"tool: unknown tool {tool!r:.80}; known: {[*TALK_TOOLS, SANCTION_TOOL]}")
    if tool in TALK_TOOLS and run.no_talk:
        return _no(scope, tool, "tool: cheap talk is disabled in this arena (no_talk)")
    over = run.action_budget.take(player, tool, turn) if run.in_tick else None  # the owner is not capped
    if over is not None:
        return _no(scope, tool, over)
    if tool == SANCTION_TOOL:
        return sanction(run, player, action, turn, validated=validated)
    try:
        a = action if validated else validate_action(action)
    except ValueError as exc:
        return _no(scope, tool, str(exc))
    if tool in MESSAGE_TOOLS:
        return _message(run, player, tool, a, turn)
    return _pact(run, player, tool, a, turn)


def _no(scope: str, tool: Any, reason: str | None) -> dict[str, Any]:
    return {"ok": False, "scope": scope, "tool": tool, "reason": reason}


def _message(run: ArenaRun, player: str, tool: str, a: dict[str, Any], turn: int) -> dict[str, Any]:
    """``broadcast``, ``send_private``, ``announce_intended_harvest`` (a validated action)."""
    ok = {"ok": True, "scope": TOOL_SCOPES[tool], "tool": tool}
    if tool == "broadcast":
        return {**ok, "id": run.bus.post("broadcast", player, turn, payload=a["text"])["id"]}
    if tool == "send_private":
        if a["target"] == player:
            return _no(TOOL_SCOPES[tool], tool, "target: cannot send a private message to oneself")
        msg = run.bus.post("private", player, turn, to=a["target"], payload=a["text"])
        if not run.bus.is_known(a["target"]):
            # 003_*: a foreign target in a standalone arena is stored for audit, read by no one
            return {
                **_no(
                    TOOL_SCOPES[tool],
                    tool,
                    f"target: unknown player {a['target']!r} (stored for audit, read by no one)",
                ),
                "id": msg["id"],
            }
        return {**ok, "id": msg["id"]}
    msg = run.bus.post("announcement", player, turn, payload=a["value"])
    run.announce(player, msg["value"])
    return {**ok, "id": msg["id"], "value": msg["value"]}


def _pact(run: ArenaRun, player: str, tool: str, a: dict[str, Any], turn: int) -> dict[str, Any]:
    """``propose_pact``, ``pledge``, ``accept_pact`` (a validated action) on the pact table."""
    scope = TOOL_SCOPES[tool]
    ok = {"ok": True, "scope": scope, "tool": tool}
    reg = run.registry
    if reg is None:
        return _no(scope, tool, "pacts: this arena has no pact table")
    slot: int | None
    if tool in ("propose_pact", "pledge"):
        unknown = [p for p in a["parties"] if p not in run.players] if tool == "propose_pact" else []
        if unknown:
            return _no(scope, tool, f"parties: unknown player(s) {unknown}")
        slot, why = (
            reg.propose(player, a["parties"], a["terms"], turn)
            if tool == "propose_pact"
            else reg.pledge(player, a["maxHarvest"], turn)
        )
        if slot < 0:
            return _no(scope, tool, why)
        return {**ok, "pactId": reg.id_of(slot), "status": reg.status(slot)}
    slot = reg.slot_of(a["pactId"])  # accept_pact
    if slot is None:
        return _no(scope, tool, f"pactId: unknown pact {a['pactId']!r}")
    i = run.players.index(player)
    tb = reg.table
    if not tb.parties[slot, i]:
        return _no(scope, tool, f"pactId: {player!r} is not a party to pact {a['pactId']!r}")
    st = reg.status(slot)
    if st != "proposed":
        return _no(scope, tool, f"pactId: pact {a['pactId']!r} is {st}, not proposed")
    if tb.accepted[slot, i]:
        return _no(scope, tool, f"pactId: {player!r} has already accepted pact {a['pactId']!r}")
    if int(tb.proposed_turn[slot]) >= turn:
        return _no(
            scope, tool, f"pactId: pact {a['pactId']!r} was proposed this turn; it can be accepted from the next"
        )
    reg.accept(slot, player, turn)
    return {**ok, "pactId": a["pactId"], "status": reg.status(slot)}


def sanction_offered(config) -> bool:
    """Whether the arena's players get the ``sanction`` tool: it runs a ``voluntary_sanction``
    plugin (the one rule the tool's refusal and the LLM players' tool list share)."""
    return any(p.type == "voluntary_sanction" for p in config.plugins)


def sanction(run: ArenaRun, player: str, action: Any, turn: int, *, validated: bool = False) -> dict[str, Any]:
    """``sanction(target, reason)``: ask the arena's ``voluntary_sanction`` plugin to fine
    ``target`` at the end of ``turn``, under the plugin's rules (the target must break a pact
    or over-harvest that turn; the player pays the cost for every player it fines, or fines
    nobody). Several calls on one target count once."""
    out = {"scope": TOOL_SCOPES[SANCTION_TOOL], "tool": SANCTION_TOOL}
    if not sanction_offered(run.config):
        return {**out, "ok": False, "reason": "tool: this arena runs no voluntary_sanction plugin"}
    try:
        a = action if validated else validate_action(action)
    except ValueError as exc:
        return {**out, "ok": False, "reason": str(exc)}
    if a["target"] not in run.players:
        return {**out, "ok": False, "reason": f"target: unknown player {a['target']!r}"}
    if a["target"] == player:
        return {**out, "ok": False, "reason": "target: cannot sanction oneself"}
    run.add_sanction_intent(player, a["target"], a["reason"])
    return {**out, "ok": True, "target": a["target"], "turn": int(turn)}


__all__ = ["TOOL_SCOPES", "dispatch_tool", "sanction_offered"]
