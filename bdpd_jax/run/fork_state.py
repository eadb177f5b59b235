"""The state a fork starts from: a live arena's kernel state carried into the fork's game.

The fork's game is the live arena's, with its remote players replaced by built-in stand-ins
and the changes applied (``bdpd_jax.run.fork``). Its state is the live arena's, leaf by leaf
(the exact state at the turn), with four rules where the two games differ
(docs/semantics/live/arena.md, "Forks"):

- ``strategy``: the strategy in force is carried by its name; a stand-in, or a player whose
  strategy the changes set, starts on its new strategy;
- ``memory``: a row is carried where the fork keeps the (strategy, player) pair; a
  ``repeat_last`` stand-in's row holds the player's last request;
- a layer the live arena did not have starts from its initial state under the changed
  config; the perturbation layer's copies of the engine numbers and visibility flags take
  the changed config's values where the changes alter them (else a change would be masked);
- the pacts the changes add to the config of an arena that has a live pact table are
  written into the table's free slots, in force from the fork's turn (``accepted_turn``);
  the live table's own pacts stay;
- any other change to the starting state of a layer the live arena has is refused: the fork
  cannot know how to merge it with the live one.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels import pacts as P
from ..kernels import perturb as pk
from ..kernels.game import Game
from ..kernels.governance import NAME as GOV
from ..kernels.perturb import PerturbLayer
from ..kernels.policies import Policy
from ..prepare.game import broadcast_batch
from .runner import compiled_init


def _repeat_last(obs: Any, memory: jax.Array, key: jax.Array) -> tuple[jax.Array, jax.Array]:
    return memory[0], memory


#: the stand-in that asks every turn what the player asked on the fork's turn (memory row 0)
REPEAT_LAST = Policy(fn=_repeat_last, name="repeat_last", memory_size=1)


def initial_state(game: Game, params: Any) -> Any:
    """One arena's initial state (numpy leaves, no batch axis) through the compiled init."""
    st = compiled_init(game)(None, broadcast_batch(params, 1))
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[..., 0], st)


def _names(game: Game, strategy: Any) -> list[str]:
    return [game.policies[int(s)].name for s in np.asarray(strategy)]


def _strategy(live_game: Game, live_state: Any, live0: Any, game: Game, fork0: Any, standin: np.ndarray) -> np.ndarray:
    names = [p.name for p in game.policies]
    in_force, live_init, fork_init = (
        _names(live_game, live_state.strategy),
        _names(live_game, live0.strategy),
        _names(game, fork0.strategy),
    )
    out = np.array(fork0.strategy, np.int32)
    for i, name in enumerate(in_force):
        if not standin[i] and fork_init[i] == live_init[i] and name in names:
            out[i] = names.index(name)
    return out


def _memory(live_game: Game, live_state: Any, game: Game, fork0: Any, standin: np.ndarray, last: np.ndarray):
    out = np.array(fork0.memory)
    live_rows = {(live_game.policies[s].name, p): j for j, (s, p) in enumerate(live_game.memory_slots)}
    mem = np.asarray(live_state.memory)
    for k, (s, p) in enumerate(game.memory_slots):
        name = game.policies[s].name
        if name == REPEAT_LAST.name and standin[p]:
            out[k, 0] = last[p]
        elif (name, p) in live_rows and not standin[p]:
            row = mem[live_rows[(name, p)]]
            w = min(row.shape[0], out.shape[1])
            out[k, :w] = row[:w]
    return out


def _same_shapes(a: Any, b: Any) -> bool:
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    return str(ta) == str(tb) and all(np.shape(x) == np.shape(y) for x, y in zip(la, lb, strict=True))


def _with_new_pacts(live: Any, live0: Any, fork0: Any, turn: int) -> tuple[Any, Any]:
    """(live governance state with the changes' new pacts written in, fork0's with the live
    initial table): the slots of the changed config's initial table that differ from the
    live config's and are not empty, each into the live table's first empty slot."""
    tab, t0, f0 = (jax.tree_util.tree_map(np.array, x.pacts) for x in (live, live0, fork0))
    fields = [f.name for f in dataclasses.fields(tab) if np.ndim(getattr(tab, f.name)) >= 1]
    new = [
        k
        for k in range(t0.status.shape[0])
        if f0.status[k] != P.EMPTY and any(not np.array_equal(getattr(t0, f)[k], getattr(f0, f)[k]) for f in fields)
    ]
    free = [k for k in range(tab.status.shape[0]) if tab.status[k] == P.EMPTY]
    if len(new) > len(free):
        raise ValueError(f"changes: {len(new)} new pacts, the live pact table has {len(free)} free slots")
    for k, slot in zip(new, free, strict=False):
        for f in fields:
            getattr(tab, f)[slot] = getattr(f0, f)[k]
        if f0.status[k] == P.ACTIVE:
            tab.accepted_turn[slot] = turn
        tab.proposed_turn[slot] = turn
    return dataclasses.replace(live, pacts=tab), dataclasses.replace(fork0, pacts=live0.pacts)


def _layer(name: str, live: Any, live0: Any, fork0: Any, perturb: bool) -> Any:
    """A layer's carried state: the live one, or (perturbation layer) the changed config's
    value of each leaf whose initial value the changes alter."""
    if not _same_shapes(live0, fork0) and not perturb:
        raise ValueError(
            f"changes: they change the shape of the {name!r} layer's state, which the live arena has "
            "been playing; fork without that change"
        )
    if perturb:
        flat0 = dict(jax.tree_util.tree_flatten_with_path(live0)[0])
        flat_live = dict(jax.tree_util.tree_flatten_with_path(live)[0])

        def pick(path, new):
            old = flat0.get(path)
            if old is None or np.shape(old) != np.shape(new):
                if path in flat_live and np.shape(flat_live[path]) != np.shape(new):
                    raise ValueError(
                        f"changes: they change the shape of the perturbation layer's {jax.tree_util.keystr(path)} "
                        "(a perturbation added to an arena that has some); fire it as a 'perturb' change"
                    )
                return new
            return new if not np.array_equal(old, new) else flat_live[path]

        return jax.tree_util.tree_map_with_path(pick, fork0)
    differs = [
        jax.tree_util.keystr(p)
        for (p, a), b in zip(
            jax.tree_util.tree_flatten_with_path(live0)[0], jax.tree_util.tree_leaves(fork0), strict=True
        )
        if not np.array_equal(a, b)
    ]
    if differs:
        raise ValueError(
            f"changes: they change the starting state of the {name!r} layer (at {differs[0]}), which the live "
            "arena has been playing (its table carries over); fork without that change, or fire it as a "
            "'perturb' change"
        )
    return live


def carried_state(
    live_game: Game,
    live_params: Any,
    live_state: Any,
    game: Game,
    params: Any,
    standin: np.ndarray,
    last: np.ndarray,
) -> Any:
    """The fork's one-arena starting state (numpy): ``live_state`` carried into ``game``
    (module docstring). ``standin``: bool[N], the players a built-in stands in for;
    ``last``: float[N], each player's last request (the ``repeat_last`` stand-in's)."""
    if live_game.engine != game.engine or live_game.n_players != game.n_players:
        raise ValueError("changes: a fork keeps the live arena's engine and players")
    live0 = initial_state(live_game, live_params)
    fork0 = initial_state(game, params)
    kept = {}
    for f in ("engine", "wealth", "last_actual", "prev_env", "turn", "collapsed", "collapse_turn", "tally"):
        if not _same_shapes(getattr(live_state, f), getattr(fork0, f)):
            raise ValueError(f"changes: they change the shape of the arena state's {f!r}; fork without that change")
        kept[f] = getattr(live_state, f)
    extra = {}
    for layer in game.layers:
        name = layer.name
        if name not in live_state.extra:
            extra[name] = fork0.extra[name]
        else:
            perturb = isinstance(layer, PerturbLayer)
            live_layer, fork_layer0 = live_state.extra[name], fork0.extra[name]
            if name == GOV and _same_shapes(live0.extra[name], fork_layer0):
                live_layer, fork_layer0 = _with_new_pacts(
                    live_layer, live0.extra[name], fork_layer0, int(live_state.turn)
                )
            extra[name] = _layer(name, live_layer, live0.extra[name], fork_layer0, perturb)
    return dataclasses.replace(
        fork0,
        **kept,
        strategy=_strategy(live_game, live_state, live0, game, fork0, standin),
        memory=_memory(live_game, live_state, game, fork0, standin, last),
        extra=extra,
    )


@functools.lru_cache(maxsize=16)
def _apply(game: Game):
    return jax.jit(functools.partial(pk.apply_perturbation, game))


def fire(game: Game, state: Any, slot: Any, params: Any) -> Any:
    """``state`` with one compiled perturbation slot fired now (the fork's 'perturb' change,
    as an owner fires one: kernels.perturb.apply_perturbation)."""
    new, _ = _apply(game)(jax.tree_util.tree_map(jnp.asarray, state), slot, params)
    return jax.tree_util.tree_map(np.asarray, new)


__all__ = ["REPEAT_LAST", "carried_state", "fire", "initial_state"]
