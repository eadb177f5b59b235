"""One turn of one arena: ``step(game, key, state, actions, params) -> (state, record)``.

The step consumes actions from any source (built-in policies through :func:`play`, or live
HTTP/LLM/JS players through the host), so a live arena and a batched one run the same code.
The order of a turn's phases is written here once: :func:`decide_phase` (the layers'
start-of-turn writes, then their begin hooks) and :func:`step_phase` (the policies decide,
the decide-side layers act, then :func:`step`). :func:`play` is the two in a row; the
rollout (kernels/rollout.py) scans ``play``; the live host (bdpd_jax/host/live/programs.py)
stops between the two to ask its external players.
Order within ``step``: sanitise requests, serve them (scheduler + engine ``step_one``: stock,
hidden reserve, collapse die), credit wealth, test collapse, run the dynamics (``step``,
skipped once collapsed), test collapse again, then the optional layers and the metrics.
A game that has ended (:func:`~.state.still_playing` false) is frozen: the state is
returned unchanged and the record says ``played=False``.
"""

from __future__ import annotations

import dataclasses
from typing import cast

import equinox as eqx
import jax
import jax.numpy as jnp

from . import rng, unroll
from .actions import Actions, announcement, as_actions, of
from .game import Game
from .layers import effective_params, has_hook
from .observe import noise_draws, observe, prev_values
from .params import Params
from .policies import decide_all
from .schedule import Served, get_scheduler
from .state import ArenaState, TurnRecord, still_playing
from .sustainability import acting, threshold_now
from .sustainability import add as add_tally


def _select(pred, a, b):
    return jax.tree_util.tree_map(lambda x, y: jnp.where(pred, x, y), a, b)


def sanitize(requests: jax.Array) -> tuple[jax.Array, jax.Array]:
    """NaN, infinite and negative requests become 0 and are flagged (kernels never raise).
    Each player's request is checked where its policy computed it (``unroll.over_players``)."""
    if requests.ndim == 1:
        return unroll.over_players(_sanitize_one, requests)
    return _sanitize_one(requests)


def _sanitize_one(requests: jax.Array) -> tuple[jax.Array, jax.Array]:
    bad = ~jnp.isfinite(requests) | (requests < 0)
    return jnp.where(bad, 0.0, requests), bad


def step(game: Game, key: jax.Array, state: ArenaState, actions: Actions, params: Params, redecide=None):
    """Advance one arena by one turn given every player's :class:`~.actions.Actions`
    (requests plus announcements, NaN = none; a bare float[N] of requests is read as
    Actions without announcements).

    ``redecide(es, p) -> (request, memory[K, M])`` (from :func:`redecider`) lets a scheduler
    that serves players one by one (sequential) re-run a policy player's decision against
    the stock its predecessors left; None serves the requests as given."""
    actions = as_actions(actions)
    params = effective_params(game, state, params)
    dt = state.wealth.dtype
    live = still_playing(state, params)
    turn = state.turn + 1
    req, invalid = sanitize(jnp.asarray(actions.requests, dt))
    # a player not yet acting (activeFrom) neither harvests nor is judged
    req = jnp.where(live & acting(params.players.active_from, turn), whole(req, params), 0.0)
    threshold = threshold_now(game, state.engine, params, turn)  # from the pool before the harvest
    served = _serve(game, key, turn, state, req, live, params, redecide)
    memory = state.memory
    if served.requests is not None:  # the scheduler re-decided (sequential): its requests rule
        # invalid and memory are set together with requests
        req, invalid = served.requests, cast(jax.Array, served.invalid)
        memory = jnp.where(live, cast(jax.Array, served.memory), state.memory)
    es, regen, share_defined, ended = _dynamics(game, served, params)
    new = ArenaState(
        engine=es,
        wealth=state.wealth + served.actual,
        last_actual=served.actual,
        memory=memory,
        strategy=state.strategy,
        prev_env=prev_values(game, state, params),
        turn=turn,
        collapsed=ended,
        collapse_turn=jnp.where(ended, turn, 0).astype(jnp.int32),
        tally=add_tally(state.tally, served.actual, threshold, regen, share_defined, live),
        extra=state.extra,
    )
    announced = jnp.where(live, announcement(jnp.asarray(actions.announced, dt)), jnp.nan)
    ctx = {
        "requested": req,
        "actual": served.actual,
        "regen": regen,
        "share_defined": share_defined,
        "announced": announced,
        "sanction": jnp.zeros((game.n_players,), dt),
    }
    new, after, layer_records = _after_harvest(game, key, turn, new, ctx, params)
    new = _select(live, new, state)
    invalid = invalid & live & acting(params.players.active_from, turn)
    return new, _record(game, turn, live, new, ctx, after, served.reserve_drawn, invalid, layer_records)


def whole(requests: jax.Array, params: Params) -> jax.Array:
    """Requests floored to whole units when the model asks for them (``model.wholeUnits``)."""
    return jnp.where(params.whole_units, jnp.floor(requests), requests)


def _serve(game: Game, key, turn, state: ArenaState, req, live, params: Params, redecide) -> Served:
    """The scheduler and the engine's ``step_one`` serve the requests (stock, hidden reserve,
    collapse die); a sequential scheduler re-asks policy players through ``redecide``."""
    dt = state.wealth.dtype
    decide_one = None
    if redecide is not None:

        def decide_one(es, p):
            r, mem = redecide(es, p)
            r, bad = sanitize(jnp.asarray(r, dt))
            return jnp.where(live & acting(params.players.active_from, turn)[p], whole(r, params), 0.0), bad, mem

    sched = get_scheduler(game.scheduler)
    return sched(game, key, turn, state.engine, req, params, wealth=state.wealth, redecide=decide_one)


def _dynamics(game: Game, served: Served, params: Params):
    """Collapse test, the dynamics (skipped once collapsed), collapse test again.
    -> (engine state, regen, share_defined, ended)."""
    es = served.engine
    ended = served.collapsed | game.engine.check_end(es, params.engine)
    es_dyn, regen = game.engine.step(es, params.engine)
    es = _select(ended, es, es_dyn)
    # the sustainable share regen/N exists only where the dynamics ran and the stock regrows
    share_defined = ~ended & game.engine.share_defined(regen)
    regen = jnp.where(ended, jnp.zeros_like(regen), regen)
    ended = ended | game.engine.check_end(es, params.engine)
    return es, regen, share_defined, ended


def _after_harvest(game: Game, key, turn, state: ArenaState, ctx: dict, params: Params):
    """Every layer's end-of-turn hook, in order. -> (state, ctx, records by layer)."""
    records = {}
    for layer in game.layers:
        state, ctx, records[layer.name] = layer.after_harvest(game, key, turn, state, ctx, params)
    return state, ctx, records


def _record(
    game: Game, turn, live, new: ArenaState, ctx: dict, after: dict, drawn, invalid, layer_records: dict
) -> TurnRecord:
    """The turn's record (the five metrics are derived from it: ``TurnRecord.metrics``). ctx:
    the harvest as served (before the layers); after: the ctx the layers left (announced,
    sanction, sanctioned)."""
    actual, regen = ctx["actual"], ctx["regen"]
    announced, sanction = after["announced"], after["sanction"]
    return TurnRecord(
        turn=turn,
        played=live,
        stock=game.engine.stock(new.engine),
        regen=regen,
        reserve_drawn=drawn,
        collapsed=new.collapsed,
        requested=ctx["requested"],
        actual=actual,
        wealth=new.wealth,
        announced=announced,
        sanction=sanction,
        invalid=invalid,
        strategy=new.strategy,
        sanctioned=after.get("sanctioned", sanction > 0) & live,
        share_defined=ctx["share_defined"] & live,
        engine_extra=game.engine.recorded_values(new.engine),
        extra={name: {"end": r} for name, r in layer_records.items()},
    )


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
        "threshold": jnp.broadcast_to(threshold_now(game, state.engine, params, turn), (n,)),
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
    flags = [layer.busy(game, turn, state, eff) for layer in game.layers if has_hook(layer, "prewrite")]
    return jnp.any(jnp.stack(flags)) if flags else jnp.zeros((), bool)


def decide(game: Game, key: jax.Array, state: ArenaState, params: Params, ahead: dict | None = None):
    """Observe and let every player's policy decide; returns (requests float[N], state).
    ``ahead``: this turn's :func:`prepare` computed at the end of the last one, else
    computed here. The decide-side layers act on the result in :func:`act`."""
    params = effective_params(game, state, params)
    obs = observe(game, key, state, params, None if ahead is None else ahead["noise"])
    ctx = policy_context(game, key, state, params)
    requests, memory = decide_all(
        game.policies, obs, state.memory, state.strategy, ctx, game.candidates, game.memory_slots
    )
    memory = jnp.where(still_playing(state, params), memory, state.memory)
    return requests, dataclasses.replace(state, memory=memory)


def act(game: Game, key: jax.Array, state: ArenaState, actions: Actions, params: Params):
    """The decide-side layers (compliance, announcements), in order, on the players'
    actions. -> (actions, state)."""
    eff = effective_params(game, state, params)
    for layer in game.layers:
        if has_hook(layer, "act"):
            state, actions = layer.act(game, key, state.turn + 1, state, actions, eff)
    return actions, state


def decisions(game: Game, key: jax.Array, state: ArenaState, params: Params, ahead: dict | None = None):
    """Every player's actions of the turn: the policies (:func:`decide`), then the
    decide-side layers (:func:`act`). -> (Actions, state)."""
    requests, state = decide(game, key, state, params, ahead)
    return act(game, key, state, of(requests), params)


def redecider(game: Game, key: jax.Array, state: ArenaState, params: Params, ahead: dict | None = None):
    """``redecide(es, p) -> (request_p, memory[K, M])``: player p's decision (policies and
    decide-side layers) had the engine state been ``es`` at the start of this turn (same
    draws); of the memory, the rows of p's ``Game.memory_slots`` are the ones p decided.
    Only schedulers serving players one by one call it; XLA drops it otherwise."""

    def redecide(es, p):
        acts, st = decisions(game, key, dataclasses.replace(state, engine=es), params, ahead)
        return acts.requests[p], st.memory

    return redecide


def begin(game: Game, key: jax.Array, state: ArenaState, params: Params):
    """Start of a turn: the layers' begin hooks (perturbations). -> (state, records by layer)."""
    turn = state.turn + 1
    live = still_playing(state, params)
    records = {}
    new = state
    for layer in game.layers:
        new, records[layer.name] = layer.begin(game, key, turn, new, params)
    return _select(live, new, state), records


class External(eqx.Module):
    """What a live turn takes from outside the kernel between its two phases."""

    mask: jax.Array  # bool[N], players whose actions come from outside
    actions: Actions  # their requests and announcements (the other players' entries unread)
    extra: dict  # layer name -> that layer's state as the outside left it (the pact table
    # after the tools' writes); replaces the decided state's


def decide_phase(game: Game, key: jax.Array, state: ArenaState, params: Params, prewritten: bool = False):
    """A turn up to the players' decisions: the layers' start-of-turn writes (:func:`prewrite`;
    skipped when ``prewritten``, static: the rollout applies them batch-wide) and begin
    hooks (:func:`begin`). -> (state, begin records). A live turn stops here to ask the
    external players (bdpd_jax/host/live/programs.py)."""
    if not prewritten:
        state = prewrite(game, key, state, params)
    return begin(game, key, state, params)


def step_phase(
    game: Game,
    key: jax.Array,
    state: ArenaState,
    begun: dict,
    params: Params,
    ahead: dict | None = None,
    external: External | None = None,
):
    """The rest of a turn from :func:`decide_phase`'s output: every player decides
    (:func:`decisions`), ``external`` actions (live players) replace theirs, and one
    :func:`step` serves them with the ``redecide`` hook (a sequential scheduler re-asks
    policy players; external ones are served as submitted). -> (state, record)."""
    redecide = redecider(game, key, state, params, ahead)
    actions, state = decisions(game, key, state, params, ahead)
    if external is not None:
        actions, state, redecide = _with_external(external, actions, state, redecide)
    state, record = step(game, key, state, actions, params, redecide=redecide)
    return state, with_begin(record, begun)


def _with_external(ext: External, actions: Actions, state: ArenaState, redecide):
    dt = actions.requests.dtype
    req, ann = jnp.asarray(ext.actions.requests, dt), jnp.asarray(ext.actions.announced, dt)
    if ext.extra:
        state = dataclasses.replace(state, extra={**state.extra, **ext.extra})

    def redecide_ext(es, p):
        r, mem = redecide(es, p)
        return jnp.where(ext.mask[p], req[p], r), mem

    actions = Actions(
        requests=jnp.where(ext.mask, req, actions.requests), announced=jnp.where(ext.mask, ann, actions.announced)
    )
    return actions, state, redecide_ext


def play(
    game: Game, key: jax.Array, state: ArenaState, params: Params, ahead: dict | None = None, prewritten: bool = False
):
    """One full turn with policy players: :func:`decide_phase` then :func:`step_phase`.
    ``ahead``: this turn's :func:`prepare`, computed at the end of the last turn (same
    numbers; kernels/rollout.py). prewritten: static; True when the caller applied
    :func:`prewrite`."""
    state, begun = decide_phase(game, key, state, params, prewritten)
    return step_phase(game, key, state, begun, params, ahead)


def with_begin(record: TurnRecord, begun: dict) -> TurnRecord:
    """Add the begin-hook records to a step's record: ``extra[layer] = {"begin", "end"}``,
    one shape for every layer and every caller (batched play and the live host)."""
    extra = {k: dict(v) for k, v in record.extra.items()}
    for k, v in begun.items():
        extra.setdefault(k, {})["begin"] = v
    return dataclasses.replace(record, extra=extra)
