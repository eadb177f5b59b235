"""The six talk tools of a live arena (003_* tool table): one action of one player.

:func:`dispatch_tool` is the body of ``Arena._dispatch``: messages go on the arena's
:class:`~bdpd_jax.host.messages.MessageBus`, pact writes into its
:class:`~bdpd_jax.host.registry.PactRegistry`. An invalid action returns ``ok: false`` with a
``reason`` and changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bdpd_jax.host.tools import (MAX_ACTIONS_PER_TURN, MAX_MESSAGES_PER_TURN, MESSAGE_TOOLS, SANCTION_TOOL, TALK_TOOLS,
                                 validate_action)

if TYPE_CHECKING:
    from bdpd_jax.host.arena import Arena

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


class ActionBudget:
    """Tool actions dispatched per player in the current turn, against the per-turn caps
    (``MAX_ACTIONS_PER_TURN`` actions, of which ``MAX_MESSAGES_PER_TURN`` messages). Every
    dispatch of a player's own answer counts, refused ones included (a refusal costs work too);
    the owner acting between ticks is not counted."""

    def __init__(self) -> None:
        self._turn: int | None = None
        self._counts: dict[str, list[int]] = {}

    def take(self, player: str, tool: Any, turn: int) -> str | None:
        """Count one action; the refusal reason when a cap is reached, else None."""
        if turn != self._turn:
            self._turn, self._counts = turn, {}
        c = self._counts.setdefault(player, [0, 0])
        if c[0] >= MAX_ACTIONS_PER_TURN:
            return f"limit: at most {MAX_ACTIONS_PER_TURN} tool actions per player per turn"
        c[0] += 1
        if tool in MESSAGE_TOOLS:
            if c[1] >= MAX_MESSAGES_PER_TURN:
                return f"limit: at most {MAX_MESSAGES_PER_TURN} messages per player per turn"
            c[1] += 1
        return None


def dispatch_tool(arena: Arena, player: str, action: Any, turn: int | None = None) -> dict[str, Any]:
    """Run one tool action of ``player`` at ``turn`` (default: the arena's next turn)."""
    turn = arena.turn + 1 if turn is None else int(turn)
    tool = action.get("tool") if isinstance(action, dict) else None
    scope = TOOL_SCOPES.get(tool, "none")

    def no(reason: str) -> dict[str, Any]:
        return {"ok": False, "scope": scope, "tool": tool, "reason": reason}

    if player not in arena.players:
        return no(f"playerId: unknown player {player!r}")
    if tool != SANCTION_TOOL and tool not in TALK_TOOLS:
        return no(f"tool: unknown tool {tool!r:.80}; known: {[*TALK_TOOLS, SANCTION_TOOL]}")
    if tool in TALK_TOOLS and arena.no_talk:
        return no("tool: cheap talk is disabled in this arena (no_talk)")
    over = arena.action_budget.take(player, tool, turn) if arena.in_tick else None  # the owner is not capped
    if over is not None:
        return no(over)
    if tool == SANCTION_TOOL:
        return sanction(arena, player, action, turn)
    try:
        a = validate_action(action)
    except ValueError as exc:
        return no(str(exc))
    ok = {"ok": True, "scope": scope, "tool": tool}
    if tool == "broadcast":
        return {**ok, "id": arena.bus.broadcast(player, a["text"], turn)["id"]}
    if tool == "send_private":
        if a["target"] == player:
            return no("target: cannot send a private message to oneself")
        msg = arena.bus.send_private(player, a["target"], a["text"], turn)
        if not arena.bus.is_known(a["target"]):
            # 003_*: a foreign target in a standalone arena is stored for audit, read by no one
            return {**no(f"target: unknown player {a['target']!r} (stored for audit, read by no one)"),
                    "id": msg["id"]}
        return {**ok, "id": msg["id"]}
    if tool == "announce_intended_harvest":
        msg = arena.bus.announce(player, a["value"], turn)
        arena._announced[player] = msg["value"]
        return {**ok, "id": msg["id"], "value": msg["value"]}
    reg = arena.registry
    if reg is None:
        return no("pacts: this arena has no pact table")
    if tool == "propose_pact":
        unknown = [p for p in a["parties"] if p not in arena.players]
        if unknown:
            return no(f"parties: unknown player(s) {unknown}")
        slot, why = reg.propose(player, a["parties"], a["terms"], turn)
        if slot < 0:
            return no(why)
        return {**ok, "pactId": reg.id_of(slot), "status": reg.status(slot)}
    if tool == "pledge":
        slot, why = reg.pledge(player, a["maxHarvest"], turn)
        if slot < 0:
            return no(why)
        return {**ok, "pactId": reg.id_of(slot), "status": reg.status(slot)}
    # accept_pact
    slot = reg.slot_of(a["pactId"])
    if slot is None:
        return no(f"pactId: unknown pact {a['pactId']!r}")
    i = arena.players.index(player)
    tb = reg.table
    if not tb.parties[slot, i]:
        return no(f"pactId: {player!r} is not a party to pact {a['pactId']!r}")
    st = reg.status(slot)
    if st != "proposed":
        return no(f"pactId: pact {a['pactId']!r} is {st}, not proposed")
    if tb.accepted[slot, i]:
        return no(f"pactId: {player!r} has already accepted pact {a['pactId']!r}")
    if int(tb.proposed_turn[slot]) >= turn:
        return no(f"pactId: pact {a['pactId']!r} was proposed this turn; it can be accepted from the next")
    reg.accept(slot, player, turn)
    return {**ok, "pactId": a["pactId"], "status": reg.status(slot)}


def sanction_offered(config) -> bool:
    """Whether the arena's players get the ``sanction`` tool: it runs a ``voluntary_sanction``
    plugin (the one rule the tool's refusal and the LLM players' tool list share)."""
    return any(p.type == "voluntary_sanction" for p in config.plugins)


def sanction(arena: Arena, player: str, action: Any, turn: int) -> dict[str, Any]:
    """``sanction(target, reason)``: ask the arena's ``voluntary_sanction`` plugin to fine
    ``target`` at the end of ``turn``, under the plugin's rules (the target must break a pact
    or over-harvest that turn; the player pays the cost for every player it fines, or fines
    nobody). Several calls on one target count once."""
    out = {"scope": TOOL_SCOPES[SANCTION_TOOL], "tool": SANCTION_TOOL}
    if not sanction_offered(arena.config):
        return {**out, "ok": False, "reason": "tool: this arena runs no voluntary_sanction plugin"}
    try:
        a = validate_action(action)
    except ValueError as exc:
        return {**out, "ok": False, "reason": str(exc)}
    if a["target"] not in arena.players:
        return {**out, "ok": False, "reason": f"target: unknown player {a['target']!r}"}
    if a["target"] == player:
        return {**out, "ok": False, "reason": "target: cannot sanction oneself"}
    arena.add_sanction_intent(player, a["target"], a["reason"])
    return {**out, "ok": True, "target": a["target"], "turn": int(turn)}


__all__ = ["ActionBudget", "TOOL_SCOPES", "dispatch_tool", "sanction_offered"]
