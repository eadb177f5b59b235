"""What a batched run with history stores of each turn's record.

A game without layers (no governance, plugins or perturbations) never changes some of a
turn's record in a batched run: its policies announce nothing (NaN), nothing sanctions it
(0, False) and nothing switches a strategy (the initial one). A layer names those it can
change (``Layer.changes``: the governance layer announces and sanctions but never switches
a strategy; a layer that names none may change all four). The history scan leaves the rest
out (:func:`stored`), so it neither computes nor writes them (bench/history.py), and
:func:`restored` puts them back on the host as read-only numpy views (no copy) once the
records are numpy arrays with the batch axis last. The records are the full ones, the same
numbers; the live host and ``CommonsEnv`` read the turn's own record and store nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .game import Game
from .state import TurnRecord

#: the record leaves a game without layers never changes in a batched run
FIXED = ("announced", "sanction", "sanctioned", "strategy")


def fixed(game: Game) -> tuple[str, ...]:
    """The record leaves this game's batched turns never change (static): those of
    :data:`FIXED` no layer of the game can change."""
    changed = {k for layer in game.layers for k in (FIXED if layer.changes is None else layer.changes)}
    return tuple(k for k in FIXED if k not in changed)


def stored(game: Game, rec: TurnRecord) -> TurnRecord:
    """The part of one turn's record a history run keeps: the fixed leaves set to None."""
    none: dict[str, Any] = dict.fromkeys(fixed(game))
    return dataclasses.replace(rec, **none)


def restored(game: Game, rec: TurnRecord, strategy0: Any) -> TurnRecord:
    """Records from :func:`stored` (numpy leaves, per-player ones (T, N, B)) with the fixed
    leaves back as broadcast views. ``strategy0``: int[N] or int[N, B], the arenas' initial
    strategies (their params' ``players.strategy``)."""
    names = [k for k in fixed(game) if getattr(rec, k) is None]
    if not names:
        return rec
    shape = np.shape(rec.actual)
    n = shape[-2]
    values = {
        "announced": np.asarray(np.nan, rec.actual.dtype),
        "sanction": np.zeros((), rec.actual.dtype),
        "sanctioned": np.zeros((), bool),
        "strategy": np.reshape(np.asarray(strategy0, np.int32), (1, n, -1)),
    }
    views: dict[str, Any] = {k: np.broadcast_to(values[k], shape) for k in names}
    return dataclasses.replace(rec, **views)
