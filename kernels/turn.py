"""One turn of one arena: ``step(game, key, state, requests, params) -> (state, record)``.

The step consumes requests from any source (built-in policies through :func:`play`, or live
HTTP/LLM/JS players through the host), so a live arena and a batched one run the same code.
Order within a turn: sanitise requests, serve them (scheduler + engine ``step_one``: stock,
hidden reserve, collapse die), credit wealth, test collapse, run the dynamics (``step``,
skipped once collapsed), test collapse again, then the optional layers and the metrics.
A game that has ended (collapsed, or past ``max_turns``) is frozen: the state is returned
unchanged and the record says ``played=False``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from . import rng
from .actions import Actions, announcement
from .game import Game
from .layers import effective_params, has_prewrite
from .metrics import governance_metrics
from .observe import noise_draws, observe, prev_values
from .params import Params
from .policies import decide_all
from .schedule import Served, get_scheduler
from .state import ArenaState, TurnRecord


def _select(pred, a, b):
    return jax.tree_util.tree_map(lambda x, y: jnp.where(pred, x, y), a, b)


def sanitize(requests: jax.Array) -> tuple[jax.Array, jax.Array]:
    """NaN, infinite and negative requests become 0 and are flagged (kernels never raise)."""
    bad = ~jnp.isfinite(requests) | (requests < 0)
    return jnp.where(bad, 0.0, requests), bad


def step(game: Game, key: jax.Array, state: ArenaState, requests, params: Params, redecide=None):
    """Advance one arena by one turn given every player's requested harvest (float[N]), or
    an :class:`~.actions.Actions` (requests plus announcements, NaN = none).

    ``redecide(es, p) -> (request, memory[K, M])`` (from :func:`redecider`) lets a scheduler
    that serves players one by one (sequential) re-run a policy player's decision against
    the stock its predecessors left; None serves ``requests`` as given."""
    params = effective_params(game, state, params)
    dt = state.wealth.dtype
    n = game.n_players
    if isinstance(requests, Actions):
        announced0 = announcement(jnp.asarray(requests.announced, dt))
        requests = requests.requests
    else:
        announced0 = jnp.full((n,), jnp.nan, dt)
    turn = state.turn + 1
    live = ~state.collapsed & (state.turn < params.max_turns)
    req, invalid = sanitize(jnp.asarray(requests, dt))
    req = jnp.where(live, req, 0.0)
    sched = get_scheduler(game.scheduler)
    es0 = state.engine
    decide_one = None
    if redecide is not None:

        def decide_one(es, p):
            r, mem = redecide(es, p)
            r, bad = sanitize(jnp.asarray(r, dt))
            return jnp.where(live, r, 0.0), bad, mem

    served: Served = sched(game, key, turn, es0, req, params, wealth=state.wealth, redecide=decide_one)
    es, actual, died, drawn = served.engine, served.actual, served.collapsed, served.reserve_drawn
    memory = state.memory
    if served.requests is not None:  # the scheduler re-decided (sequential): its requests rule
        req, invalid = served.requests, served.invalid
        memory = jnp.where(live, served.memory, state.memory)
    wealth = state.wealth + actual
    ended = died | game.engine.check_end(es, params.engine)
    es_dyn, regen = game.engine.step(es, params.engine)
    es = _select(ended, es, es_dyn)
    # the sustainable share regen/N exists only where the dynamics ran and the stock regrows
    share_defined = ~ended & game.engine.share_defined(regen)
    regen = jnp.where(ended, jnp.zeros_like(regen), regen)
    ended = ended | game.engine.check_end(es, params.engine)

    new = ArenaState(
        engine=es,
        wealth=wealth,
        last_actual=actual,
        memory=memory,
        strategy=state.strategy,
        prev_env=prev_values(game, state, params),
        turn=turn,
        collapsed=ended,
        collapse_turn=jnp.where(ended, turn, 0).astype(jnp.int32),
        extra=state.extra,
    )
    announced = jnp.where(live, announced0, jnp.nan)
    sanction = jnp.zeros((n,), dt)
    layer_records = {}
    ctx = {"requested": req, "actual": actual, "regen": regen, "share_defined": share_defined,
           "announced": announced, "sanction": sanction}
    for layer in game.layers:
        new, ctx, layer_records[layer.name] = layer.after_harvest(game, key, turn, new, ctx, params)
    announced, sanction = ctx["announced"], ctx["sanction"]
    playing = jnp.ones((n,), bool) & live
    sanctioned = ctx.get("sanctioned", sanction > 0)  # players with a sanction fired this turn
    metrics = governance_metrics(actual, announced, jnp.sum(sanctioned & playing).astype(dt), regen, playing,
                                 share_defined)
    new = _select(live, new, state)
    record = TurnRecord(
        turn=turn,
        played=live,
        stock=game.engine.stock(new.engine),
        regen=regen,
        reserve_drawn=drawn,
        collapsed=new.collapsed,
        requested=req,
        actual=actual,
        wealth=new.wealth,
        announced=announced,
        sanction=sanction,
        invalid=invalid & live,
        strategy=new.strategy,
        metrics=metrics,
        engine_extra=game.engine.recorded_values(new.engine),
        extra={name: {"end": r} for name, r in layer_records.items()},
    )
    return new, record


def policy_context(game: Game, key: jax.Array, state: ArenaState, params: Params) -> dict:
    """What each player knows of itself: true wealth, its parameters, draws. Leaves are [N]."""
    n = game.n_players
    turn = state.turn + 1
    players = jnp.arange(n)
    ref = game.engine.reference(state.engine, params.engine)
    return {
        "wealth": state.wealth,
        "intensity": params.players.intensity,
        "reduction_factor": params.players.reduction_factor,
        "reference": jnp.broadcast_to(ref, (n,)),
        "unit": jnp.broadcast_to(game.engine.harvest_unit(params.engine), (n,)),
        "u": jax.vmap(lambda p: rng.uniform(key, turn, p, rng.POLICY, (), game.generator))(players),
        "key": jax.vmap(lambda p: rng.jax_key(key, turn, p, rng.POLICY + 100, game.generator))(players),
    }


def prepare(game: Game, key: jax.Array, state: ArenaState, params: Params) -> dict:
    """What the next turn's decide side draws from the key and the turn alone: its
    observation noise. The rollout calls it at the end of each turn and carries the result
    (kernels/rollout.py); ``decide(..., ahead=)`` then reads it. Same numbers."""
    return {"noise": noise_draws(game, key, state.turn + 1)}


def prewrite(game: Game, key: jax.Array, state: ArenaState, params: Params) -> ArenaState:
    """Every layer's start-of-turn writes for the next turn (scripted pact writes), from the
    state before ``begin``. :func:`play` applies them unless told they are applied (the
    rollout applies them batch-wide, skipping turns when no arena is :func:`prewrite_busy`)."""
    turn = state.turn + 1
    eff = effective_params(game, state, params)
    for layer in game.layers:
        state = layer.prewrite(game, key, turn, state, eff)
    return state


def prewrite_busy(game: Game, state: ArenaState, params: Params) -> jax.Array:
    """bool[]: whether any layer's :func:`prewrite` can change this arena's state next turn."""
    turn = state.turn + 1
    eff = effective_params(game, state, params)
    flags = [layer.busy(game, turn, state, eff) for layer in game.layers if has_prewrite(layer)]
    return jnp.any(jnp.stack(flags)) if flags else jnp.zeros((), bool)


def decide(game: Game, key: jax.Array, state: ArenaState, params: Params, ahead: dict | None = None):
    """Observe and let every player's policy decide; returns (requests float[N], state), or
    (Actions, state) when a layer acts on the decide side (compliance, announcements). ``ahead``: this
    turn's :func:`prepare` computed at the end of the last one, else computed here."""
    params = effective_params(game, state, params)
    obs = observe(game, key, state, params, None if ahead is None else ahead["noise"])
    ctx = policy_context(game, key, state, params)
    requests, memory = decide_all(game.policies, obs, state.memory, state.strategy, ctx, game.candidates,
                                   game.memory_slots)
    live = ~state.collapsed & (state.turn < params.max_turns)
    memory = jnp.where(live, memory, state.memory)
    state = dataclasses.replace(state, memory=memory)
    acting = [layer for layer in game.layers if hasattr(layer, "act")]
    if not acting:
        return requests, state
    actions = Actions(requests=requests, announced=jnp.full(requests.shape, jnp.nan, requests.dtype))
    for layer in acting:  # decide-side layers (compliance, announcements): -> Actions
        state, actions = layer.act(game, key, state.turn + 1, state, actions, params)
    return actions, state


def redecider(game: Game, key: jax.Array, state: ArenaState, params: Params, ahead: dict | None = None):
    """``redecide(es, p) -> (request_p, memory[K, M])``: player p's decision (policies and
    decide-side layers) had the engine state been ``es`` at the start of this turn (same
    draws); of the memory, the rows of p's ``Game.memory_slots`` are the ones p decided.
    Only schedulers serving players one by one call it; XLA drops it otherwise."""

    def redecide(es, p):
        acts, st = decide(game, key, dataclasses.replace(state, engine=es), params, ahead)
        req = acts.requests if isinstance(acts, Actions) else acts
        return req[p], st.memory

    return redecide


def begin(game: Game, key: jax.Array, state: ArenaState, params: Params):
    """Start of a turn: the layers' begin hooks (perturbations). -> (state, records by layer)."""
    turn = state.turn + 1
    live = ~state.collapsed & (state.turn < params.max_turns)
    records = {}
    new = state
    for layer in game.layers:
        new, records[layer.name] = layer.begin(game, key, turn, new, params)
    return _select(live, new, state), records


def play(game: Game, key: jax.Array, state: ArenaState, params: Params, ahead: dict | None = None,
         prewritten: bool = False):
    """One full turn with policy players: prewrite, begin, decide, step. ``ahead``: this
    turn's :func:`prepare`, computed at the end of the last turn (same numbers;
    kernels/rollout.py). prewritten: static; True when the caller applied :func:`prewrite`."""
    if not prewritten:
        state = prewrite(game, key, state, params)
    state, begun = begin(game, key, state, params)
    redecide = redecider(game, key, state, params, ahead)
    requests, state = decide(game, key, state, params, ahead)
    state, record = step(game, key, state, requests, params, redecide=redecide)
    return state, with_begin(record, begun)


def with_begin(record: TurnRecord, begun: dict) -> TurnRecord:
    """Add the begin-hook records to a step's record: ``extra[layer] = {"begin", "end"}``,
    one shape for every layer and every caller (batched play and the live host)."""
    extra = {k: dict(v) for k, v in record.extra.items()}
    for k, v in begun.items():
        extra.setdefault(k, {})["begin"] = v
    return dataclasses.replace(record, extra=extra)
