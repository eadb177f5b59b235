"""The two compiled kernel programs a live turn is cut into, batched over arenas.

A batched turn is ``kernels.turn.play = decide_phase -> step_phase`` in one program. A live
turn must stop between the two to ask the external players, so it is two programs that call
the same two kernel phases (the order of a turn is written once, in kernels/turn.py), both
jitted once per :class:`~bdpd_jax.kernels.game.Game`. Both take and return trailing-batch-axis
arrays and vmap over a leading axis inside (``batch_first``), as
``kernels.rollout.run_turns`` does inside its scan.

* ``decide_phase(keys, state, params)`` -> ``kernels.turn.decide_phase``'s state (after the
  layers' start-of-turn writes and begin hooks) and begin records, every player's
  observation, (governance layer only) the pact table after the builtins' scripted talk of
  the turn, on which the host writes the tools, and the turn's ``kernels.turn.prepare``
  (noise draws) computed from the state before the turn, as the batched rollout carries it
  into the turn. External players sit on the :data:`EXTERNAL` placeholder policy, which
  asks for nothing.
* ``step_phase(keys, begun_state, begun, ext, ext_req, ext_ann, pacts, ahead, params)`` ->
  (state, record): ``kernels.turn.step_phase`` with the external players' requests and
  announcements where ``ext`` is set and the host's pact table (after the tool writes) as a
  ``kernels.turn.External``. The builtins decide again (same values; it keeps decide -> step
  one program, fused and rounded as in ``play``); ``ahead`` enters as a program argument
  (in memory, as the rollout's carry does, so XLA fuses and rounds the observation alike).

With no external player the programs compute exactly what ``play`` computes, so a live arena
equals a batched one bit for bit (tests/host/test_host_arena.py).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from bdpd_jax.kernels.actions import Actions
from bdpd_jax.kernels.game import Game
from bdpd_jax.kernels.governance import NAME as GOV
from bdpd_jax.kernels.layers import effective_params
from bdpd_jax.kernels.observe import observe
from bdpd_jax.kernels.policies import Policy
from bdpd_jax.kernels.rollout import batched
from bdpd_jax.kernels.turn import External, decide_phase, prepare, step_phase


def _external_fn(obs, memory, key):
    return jnp.zeros((), memory.dtype), memory


# The kernel-side stand-in for a player whose decisions come from outside (code, HTTP, LLM):
# requests nothing, so a step fed no external request harvests nothing for it.
EXTERNAL = Policy(fn=_external_fn, name="external", memory_size=0)


def has_governance(game: Game) -> bool:
    return any(layer.name == GOV for layer in game.layers)


def _decide_phase(game: Game, key, state, params):
    ahead = prepare(game, key, state, params)  # what the rollout carries into this turn
    state_b, begun = decide_phase(game, key, state, params)
    obs = observe(game, key, state_b, effective_params(game, state_b, params), ahead["noise"])
    pacts_d = None
    if has_governance(game):  # the table after the builtins' scripted talk of this turn
        pacts_d = state_b.extra[GOV].pacts
    return state_b, begun, obs, pacts_d, ahead


def _step_phase(game: Game, key, state_b, begun, ext, ext_req, ext_ann, pacts, ahead, params):
    # The builtins' decisions are recomputed in ``step_phase`` (same key, same state: the
    # same values as the decide phase's) so that the whole of decide -> step is one program,
    # as in ``play``: XLA then fuses (and rounds, FMA contraction included) the turn as the
    # batched run does.
    extra = {}
    if pacts is not None:  # the host's table (after the tool writes) replaces the kernel's
        extra[GOV] = dataclasses.replace(state_b.extra[GOV], pacts=pacts)
    external = External(mask=ext, actions=Actions(requests=ext_req, announced=ext_ann), extra=extra)
    return step_phase(game, key, state_b, begun, params, ahead, external)


def _front(tree):
    return jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, -1, 0), tree)


def _back(tree):
    return jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, 0, -1), tree)


def batch_first(fn):
    """``fn`` vmapped over a LEADING batch axis, called with and returning trailing-axis
    arrays: the layout ``kernels.rollout.run_turns`` uses inside its scan, so the per-arena
    arithmetic is laid out (and rounded) as in the batched run."""
    inner = jax.vmap(fn)

    def outer(*args):
        return _back(inner(*_front(args)))

    return outer


@functools.lru_cache(maxsize=32)
def programs(game: Game):
    """(init, decide_phase, step_phase), each jitted, batched over the trailing axis."""
    init = jax.jit(batched(game.init))
    dec = jax.jit(batch_first(functools.partial(_decide_phase, game)))
    stp = jax.jit(batch_first(functools.partial(_step_phase, game)))
    return init, dec, stp


__all__ = ["EXTERNAL", "programs", "has_governance"]
