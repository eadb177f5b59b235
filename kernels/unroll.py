"""Unrolled or array form over players and pact slots: a static choice by the axis' length.

Written per player (one value per arena per op, unrolled over the static player count), a
turn's work is contiguous over the batch under vmap, which XLA:CPU vectorises better than a
[B, N] array with a short inner axis; but the program grows with N (and with N x P for the
pact tables), and so does its compile (figures: bench/README.md, "Many players"). Above a
threshold the kernels use the array form over that axis instead: the same operations on [N]
(or [P], [P, N]) arrays, where the axis is long enough to vectorise on its own.
The numbers are the same in both forms (tests/test_unroll.py).

The thresholds are read when a kernel is traced. :func:`forced` makes one form apply
whatever the lengths, for tests comparing the two (trace a fresh function inside it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import jax
import jax.numpy as jnp

# Chosen by measurement (bench/players.py --forms / --slot-forms; the table in bench/README.md).
#: the longest player axis written unrolled; more players use the array form
MAX_PLAYERS = 12
#: the most pact slots written unrolled; more slots use the array form
MAX_SLOTS = 4

_FORCED: list[dict[str, bool]] = []


def players(n: int) -> bool:
    """True: unroll over the ``n`` players (else the array form)."""
    return _FORCED[-1].get("players", n <= MAX_PLAYERS) if _FORCED else n <= MAX_PLAYERS


def slots(p: int) -> bool:
    """True: unroll over the ``p`` pact slots (else the array form)."""
    return _FORCED[-1].get("slots", p <= MAX_SLOTS) if _FORCED else p <= MAX_SLOTS


def over_players(fn: Callable, *xs: jax.Array):
    """``fn`` on each player's entries of ``xs`` (arrays with the players first), the results
    stacked back, when the players are unrolled; ``fn`` on the whole arrays otherwise. The
    same numbers either way; unrolled, XLA:CPU computes each player's value where its inputs
    are made instead of inside every consumer of the stacked array (bench/README.md, "The
    ladder")."""
    n = xs[0].shape[0]
    if not players(n):
        return fn(*xs)
    parts = [fn(*(x[i] for x in xs)) for i in range(n)]
    return jax.tree_util.tree_map(lambda *p: jnp.stack(p), *parts)


@contextmanager
def forced(players: bool | None = None, slots: bool | None = None) -> Iterator[None]:
    """Within the block, the player axis and/or the slot axis is unrolled (True) or in array
    form (False) whatever its length; None leaves that axis to its threshold."""
    choice = {k: bool(v) for k, v in (("players", players), ("slots", slots)) if v is not None}
    _FORCED.append(choice)
    try:
        yield
    finally:
        _FORCED.pop()
