"""The static description of a game: the code paths and shapes one compiled program serves."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax.numpy as jnp

from .engines import Engine, get_engine
from .observe import prev_values
from .params import OBS_VARS, Params, fdtype
from .rng import Generator
from .state import ArenaState


@dataclass(frozen=True)
class Game:
    """Static choices: engine, scheduler, the strategies in play, counts and the generator.

    Everything numeric lives in :class:`Params`; two games that differ only in numbers are the
    same Game and share one compiled program.
    """

    engine: Engine
    n_players: int
    policies: tuple  # the distinct strategies that may be in force (Builtin | Policy)
    scheduler: str = "simultaneous"
    generator: Generator = "hash"
    layers: tuple = ()  # optional turn layers (governance, perturbations), in order
    #: observation variables that draw noise. The others read exactly and cost no draw; the
    #: host lists every variable whose config entry sets ``noise`` (any value, 0 included),
    #: so sweeping a noise level compiles once.
    noisy: tuple = OBS_VARS
    #: (variable, QUALITATIVE | SIGN) for the variables not read exactly: a choice of code
    #: path, static, so an exact variable costs no bucketing.
    resolution: tuple = ()
    #: per player, the strategy indices that can be in force for it (None = all of them)
    candidates: tuple | None = None

    @property
    def memory_size(self) -> int:
        return max([1] + [p.memory_size for p in self.policies])

    @property
    def memory_slots(self) -> tuple[tuple[int, int], ...]:
        """(strategy, player) pairs that keep a private memory: every candidate strategy of a
        player whose ``memory_size`` > 0, in player order. ``state.memory`` has one row each,
        so memory costs nothing for strategies that never hold one (a 4-strategy game with
        one adaptive player stores 1 row, not 4 x N)."""
        out = []
        for p in range(self.n_players):
            for s in self.candidates[p] if self.candidates is not None else range(len(self.policies)):
                if self.policies[s].memory_size > 0:
                    out.append((s, p))
        return tuple(out)

    @staticmethod
    def of(engine: str | Engine, n_players: int, policies: tuple, **kw) -> Game:
        eng = get_engine(engine) if isinstance(engine, str) else engine
        return Game(engine=eng, n_players=n_players, policies=tuple(policies), **kw)

    def init(self, params: Params) -> ArenaState:
        """The state before turn 1."""
        from .sustainability import init_tally

        dt = fdtype()
        n, k, m = self.n_players, len(self.memory_slots), self.memory_size
        es = self.engine.init(params.engine)
        wealth = jnp.asarray(params.players.wealth0, dt)
        state = ArenaState(
            engine=es,
            wealth=wealth,
            last_actual=jnp.zeros((n,), dt),
            memory=jnp.zeros((k, m), dt),
            strategy=jnp.asarray(params.players.strategy, jnp.int32),
            prev_env=jnp.zeros((0,), dt),
            turn=jnp.zeros((), jnp.int32),
            collapsed=jnp.zeros((), bool),
            collapse_turn=jnp.zeros((), jnp.int32),
            tally=init_tally(n, dt),
            extra={layer.name: layer.init(self, params) for layer in self.layers},
        )
        return dataclasses.replace(state, prev_env=prev_values(self, state, params))
