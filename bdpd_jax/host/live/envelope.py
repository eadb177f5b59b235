"""The observation envelope an external player decides on (003_*, 004_* A.1): the kernel
observation (NaN -> null), ``pacts`` (``PactRegistry.view_for``), ``inbox`` (last turn's
messages), ``toolResults`` (what its tool calls of last turn returned) and, in an arena that
talks between harvests, ``discussion`` (last turn's report and utterances)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from bdpd_jax.host.live.discussion import last_discussion
from bdpd_jax.host.live.registry import nums
from bdpd_jax.kernels.params import OBS_VARS, PEER_VARS

if TYPE_CHECKING:
    from bdpd_jax.host.live.arena_run import ArenaRun


def envelopes(run: ArenaRun, players: list[str], obs: dict[str, np.ndarray], turn: int) -> dict[str, dict[str, Any]]:
    """The envelopes of several players of one turn; each observation array is converted
    to Python numbers once for all of them (``nums``)."""
    idx = {p: j for j, p in enumerate(run.players)}
    values = {name: nums(obs[name]) for name in OBS_VARS if name != "turn"}
    talked = last_discussion(run.records, turn)  # the same for every player
    out = {}
    for player in players:
        i = idx[player]
        env: dict[str, Any] = {"turn": turn, "playerId": player}
        for name, v in values.items():
            if name in PEER_VARS:
                row = v[i]
                env[name] = {p: row[j] for p, j in idx.items() if j != i}
            else:
                env[name] = v[i]
        env["pacts"] = run.registry.view_for(player) if run.registry is not None else {"active": [], "proposed": []}
        if not run.no_talk:
            env["inbox"] = run.bus.inbox_at(player, turn)
            env["toolResults"] = tool_results(run.records, player, turn)
        if talked is not None:
            env["discussion"] = talked
        out[player] = env
    return out


def tool_results(records: Sequence[dict[str, Any]], player: str, turn: int) -> list[dict[str, Any]]:
    """003_*: what ``player``'s tool calls of turn ``turn - 1`` returned (``{ok, scope, tool,
    ...}`` each, refusals included; actions its agent dropped as malformed add one
    ``{ok: false, scope: "none", tool: null, reason}`` with the agent's error text).
    ``records``: the arena's turn records, the last one last."""
    last = records[-1] if records else None
    if last is None or last["turn"] != turn - 1:
        return []
    out = [t["result"] for t in last["tools"] if t["playerId"] == player]
    for d in last["decisions"]:
        if d["playerId"] == player and d.get("error") and "dropped" in d["error"]:
            out.append({"ok": False, "scope": "none", "tool": None, "reason": d["error"]})
    return out


__all__ = ["envelopes", "tool_results"]
