"""``ArenaView``: the read side of a live :class:`~bdpd_jax.host.live.arena.Arena`.

What an arena shows of the :class:`~bdpd_jax.host.live.arena_run.ArenaRun` it owns once started:
the run's state (turn, records, game, bus, pact registry, agents, the kernel state), its
players, and the envelopes they decide on. Before the start each field reads its default, or
raises a ValueError naming it. Read-only: the Arena (the lifecycle, the tick, the owner's
actions) is the only writer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bdpd_jax.host.live.arena_run import ArenaRun, shown_kind
from bdpd_jax.host.live.envelope import envelopes
from bdpd_jax.host.live.players import LivePlayerConfig

_NOT_STARTED = object()


def _of_run(name: str, doc: str, before_start: Any = _NOT_STARTED) -> property:
    """A read-only view of the run state's ``name`` (``before_start`` until the arena starts;
    without one, reading it before start is a ValueError)."""

    def get(self: ArenaView) -> Any:
        if self._run is None:
            if before_start is _NOT_STARTED:
                raise ValueError(f"status: the arena has not started (no {name} yet)")
            return before_start
        return getattr(self._run, name)

    return property(get, doc=doc)


class ArenaView:
    """The arena's run state, read-only (see ArenaRun); the Arena sets the three fields below."""

    _run: ArenaRun | None  # built by Arena.start()
    _joined: list[LivePlayerConfig]  # the players, until start hands them to the run
    _shown_kinds: dict[str, str]  # the kind shown for a player replayed by a script (replay.py)

    turn = _of_run("turn", "The last turn played (0 before the first).", 0)
    done = _of_run("done", "True once the game is over.", False)
    records = _of_run("records", "The last keep_records turn records, the latest last.", ())
    in_tick = _of_run("in_tick", "True while a turn is being played (the players' own actions).", False)
    max_turns = _of_run("max_turns", "The turn the game ends at (None before start).", None)
    game = _of_run("game", "The kernel Game (external players on the placeholder policy).")
    params = _of_run("params", "The kernel Params (unbatched).")
    key = _of_run("key", "rng.arena_key(seed, arena_index).")
    external = _of_run("external", "bool[N]: the players asked from outside.")
    external_index = _of_run("external_index", "The placeholder policy's index (-1: none).")
    bus = _of_run("bus", "The cheap-talk MessageBus.")
    registry = _of_run("registry", "The PactRegistry (None without a governance layer).")
    agents = _of_run("agents", "Per player, its agent (None for builtins).")
    action_budget = _of_run("action_budget", "The per-turn caps on the players' tool actions.")

    @property
    def specs(self) -> list[LivePlayerConfig]:
        """The players' specs (read-only; ``join`` adds one)."""
        return self._run.specs if self._run is not None else self._joined

    @property
    def players(self) -> list[str]:
        return [s.player_id for s in self.specs]

    def agent_kind(self, i: int) -> str:
        """Player i's agentType as records and summary.json show it (the original kind of a
        player that a replay plays from its log)."""
        return shown_kind(self.specs[i], self._shown_kinds)

    def _started(self) -> ArenaRun:
        if self._run is None:
            raise ValueError("status: the arena has not started")
        return self._run

    @property
    def state(self):
        """This arena's kernel state (numpy leaves, no batch axis), owned by its run."""
        return self._started().state

    def observation(self, player: str, obs: dict[str, np.ndarray], turn: int) -> dict[str, Any]:
        """The envelope ``player`` decides on: kernel observation + ``pacts`` + ``inbox``."""
        return self.envelopes([player], obs, turn)[player]

    def envelopes(self, players: list[str], obs: dict[str, np.ndarray], turn: int) -> dict[str, dict[str, Any]]:
        """The envelopes of several players of one turn (:func:`~bdpd_jax.host.live.envelope.envelopes`)."""
        return envelopes(self._started(), players, obs, turn)


__all__ = ["ArenaView"]
