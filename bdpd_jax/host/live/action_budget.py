"""``ActionBudget``: the per-turn caps on one live arena's tool actions (003_* tool table)."""

from __future__ import annotations

from typing import Any

from bdpd_jax.host.agents.tools import MAX_ACTIONS_PER_TURN, MAX_MESSAGES_PER_TURN, MESSAGE_TOOLS


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


__all__ = ["ActionBudget"]
