"""The victory evaluation and player rankings of a game (004_* summary.json; docs/semantics.md
§13 "Victory evaluation"), one rule for live arenas (``summary.json``) and batches
(``Results.report()``).

The seeds name no victory rule; this one is built from the paper's outcome notions:

* **outcome** -- ``collapsed`` (the commons collapsed, at ``collapseTurn``), ``sustained`` (it
  survived every turn of the game) or ``open`` (it was alive when the game was closed early);
* **gain** -- a player's final wealth minus its starting ``privateResource`` (who gained most);
* **compliant** -- the player violated no pact (no violation event; true when there are none);
* **rank** -- by gain, 1 = largest; equal gains share the better rank;
* **winners** -- nobody when the commons collapsed (the tragedy leaves no winner); else the
  compliant players with the largest gain among the compliant ones (none if nobody complied).
"""

from __future__ import annotations

from typing import Any

import numpy as np

OUTCOMES = ("collapsed", "sustained", "open")


def evaluate(
    survived: np.ndarray,
    turns_played: np.ndarray,
    max_turns: int | np.ndarray,
    gain: np.ndarray,
    violations: np.ndarray,
) -> dict[str, np.ndarray]:
    """Arrays over arenas: survived[B], turns_played[B], gain[N, B], violations[N, B] ->
    outcome[B] (str), rank[N, B], compliant[N, B], winner[N, B]."""
    survived = np.asarray(survived, bool)
    gain = np.asarray(gain, np.float64)
    compliant = np.asarray(violations) == 0
    rank = (gain[None, :, :] > gain[:, None, :]).sum(axis=1) + 1
    outcome = np.where(
        ~survived, "collapsed", np.where(np.asarray(turns_played) >= np.asarray(max_turns), "sustained", "open")
    )
    cand = compliant & survived[None, :]
    best = np.where(cand, gain, -np.inf).max(axis=0)
    winner = cand & (gain == best[None, :])
    return {"outcome": outcome, "rank": rank.astype(np.int32), "compliant": compliant, "winner": winner}


def _short(x: float) -> float:
    """The shortest decimal of ``x`` in float32 (wealth is float32 in the kernels)."""
    return float(np.format_float_positional(np.float32(x), unique=True, trim="-"))


def report(
    *,
    players: list[str],
    survived: bool,
    collapse_turn: int | None,
    turns_played: int,
    max_turns: int,
    initial: list[float],
    final: list[float],
    violations: list[float],
) -> dict[str, Any]:
    """The ``victory`` block of one game's summary.json."""
    gain = np.asarray(final, np.float64) - np.asarray(initial, np.float64)
    ev = evaluate(
        np.asarray([survived]), np.asarray([turns_played]), max_turns, gain[:, None], np.asarray(violations)[:, None]
    )
    order = sorted(range(len(players)), key=lambda i: (int(ev["rank"][i, 0]), i))
    return {
        "outcome": str(ev["outcome"][0]),
        "survived": bool(survived),
        "collapseTurn": collapse_turn,
        "turnsPlayed": int(turns_played),
        "maxTurns": int(max_turns),
        "winners": [players[i] for i in order if ev["winner"][i, 0]],
        "rankings": [
            {
                "rank": int(ev["rank"][i, 0]),
                "playerId": players[i],
                "gain": _short(gain[i]),
                "wealth": float(final[i]),
                "compliant": bool(ev["compliant"][i, 0]),
                "violations": int(violations[i]),
            }
            for i in order
        ],
    }


__all__ = ["evaluate", "report", "OUTCOMES"]
