"""``governance_agent``: an arena-level regulator (issue 17), and the action set it shares
with the live host's HTTP/LLM regulators.

Its decision is one :class:`GovAction` of three mandates, each NaN when not taken:

- ``cap``: the maxHarvest of *the regulator's pact*, a ``harvest_cap`` binding every player
  from the turn it applies, without acceptance (a mandate); it replaces the regulator's
  previous pact in the regulator's reserved slot of the pact table, so the ordinary pact check
  finds its breaches and the ordinary sanction specs punish them. ``+inf`` lifts it (the slot
  binds no one again, status ``inactive``); a cap outside harvest_cap's bound is ignored.
- ``ladder_scale``: the factor on every sanction spec's amounts (``GovState.scale``; 1 when
  no agent ever set it); an absolute value, not a step. Negative or infinite: ignored.
- ``regen``: a ``regen_set`` mandate, fired through the perturbation registry's own effect
  (the game carries a perturbation layer with ``regen_set`` when a governance agent is in the
  config and the engine has a regeneration rate; otherwise ignored).

Timing: the action pending in the agent's memory (``pending``) is applied by ONE function,
:func:`apply_action`, in the plugin layer's begin hook at the start of the next turn, before
the players observe; so an action decided from turn t's outcome binds turn t + 1. The
built-in rule decides at the end of each turn (:func:`decide`). With the static option
``external`` the rule is off and the pending action comes from the live host, written between
turns by :func:`set_pending` (cleared once applied).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp

from . import pacts as P
from . import perturb as PT
from .bounds import MAX_LADDER_SCALE, MAX_MAGNITUDE
from .governance import NAME as GOV  # its state holds the pact table and the ladder scale
from .perturb_registry import ALL
from .plugins import NAME, Effects, PluginView

NEVER = -(2**30)  # "last action" before any


class GovAction(NamedTuple):
    """A regulator's decision (float[] each; NaN = not taken)."""

    cap: jax.Array  # maxHarvest of the regulator's harvest_cap pact binding all; +inf lifts it
    ladder_scale: jax.Array  # factor on every sanction spec's amounts (absolute)
    regen: jax.Array  # regen_set mandate: the regeneration rate r <- regen


def no_action(dtype=None) -> GovAction:
    nan = jnp.full((), jnp.nan, dtype or jnp.result_type(float))
    return GovAction(nan, nan, nan)


class AgentParams(eqx.Module):
    """The built-in rule's numbers (every one a params leaf) and the static ``external``."""

    coop_below: jax.Array  # float[], act when cooperation_index < this ...
    stock_below: jax.Array  # float[], ... or commonsRatio < this
    coop_above: jax.Array  # float[], loosen when cooperation_index >= this ...
    stock_above: jax.Array  # float[], ... and commonsRatio >= this
    cap: jax.Array  # float[], the maxHarvest it imposes when acting (NaN = never proposes)
    tighten: jax.Array  # float[], ladder scale x tighten when acting
    loosen: jax.Array  # float[], ladder scale x loosen (never below 1) when loosening
    regen: jax.Array  # float[], the regen_set value it mandates when acting (NaN = never)
    cooldown: jax.Array  # int32[], turns at least between two applied actions
    external: bool = eqx.field(static=True, default=False)  # the live host decides (pending)


def init(game, pp: AgentParams) -> dict:
    """Memory: ``pending`` (the action applied next turn) and what it did: ``cap`` in force
    (NaN none), ``scale`` (its ladder scale), ``regen`` (last mandate, NaN none), ``last``
    (turn of its last applied action), ``count`` (turns with an action applied)."""
    dt = pp.cap.dtype
    return {
        "pending": no_action(dt),
        "cap": jnp.full((), jnp.nan, dt),
        "scale": jnp.ones((), dt),
        "regen": jnp.full((), jnp.nan, dt),
        "last": jnp.int32(NEVER),
        "count": jnp.int32(0),
    }


def decide(view: PluginView, pp: AgentParams, memory: dict) -> GovAction:
    """The built-in rule at the end of turn t (its action applies at t + 1).

    bad = cooperation_index < coop_below or commonsRatio < stock_below (a NaN metric never
    triggers); good = cooperation_index >= coop_above and commonsRatio >= stock_above.
    Only when (t + 1) - last >= max(cooldown, 1): on bad it imposes ``cap``, scales the
    ladder by ``tighten`` and mandates ``regen``; on good (not bad) it lifts its cap and scales
    the ladder by ``loosen``, never below 1. A field equal to what is already in force is
    NaN (nothing to do)."""
    dt = memory["scale"].dtype
    coop, ratio = view.metrics["cooperation_index"], view.stock_ratio
    bad = (coop < pp.coop_below) | (ratio < pp.stock_below)
    good = (coop >= pp.coop_above) & (ratio >= pp.stock_above) & ~bad
    ready = (view.turn + 1 - memory["last"]) >= jnp.maximum(pp.cooldown, 1)
    scale = memory["scale"]
    in_force = ~jnp.isnan(memory["cap"])
    cap = jnp.where(bad, pp.cap, jnp.where(good & in_force, jnp.inf, jnp.nan))
    cap = jnp.where(ready & (cap != memory["cap"]), cap, jnp.nan)
    new_scale = jnp.where(
        bad, scale * pp.tighten, jnp.where(good & (scale > 1), jnp.maximum(scale * pp.loosen, 1.0), scale)
    )
    new_scale = jnp.minimum(new_scale, MAX_LADDER_SCALE)  # tighten repeated would overflow the fines
    new_scale = jnp.where(ready & (new_scale != scale), new_scale, jnp.nan)
    regen = jnp.where(ready & bad & (pp.regen != memory["regen"]), pp.regen, jnp.nan)
    return GovAction(cap.astype(dt), new_scale.astype(dt), regen.astype(dt))


def act(game, view: PluginView, pp: AgentParams, memory: dict):
    """End of turn: the rule's action becomes pending (external: the host's stays). No fines."""
    n = game.n_players
    dt = view.wealth.dtype
    z = jnp.zeros((n, n), dt)
    if not pp.external:
        memory = {**memory, "pending": decide(view, pp, memory)}
    return Effects(fines=z, costs=z, reason=jnp.zeros((n,), jnp.int32)), memory


def valid(action: GovAction) -> GovAction:
    """The action with every field that cannot apply set to NaN: cap within harvest_cap's
    bound (or +inf, lift); ladder_scale finite and >= 0; regen finite and >= 0. A scale over
    MAX_LADDER_SCALE or a regen over MAX_MAGNITUDE is clamped to it (kernels/bounds.py)."""
    nan = jnp.nan
    ok_cap = P.valid_terms(jnp.int32(P.HARVEST_CAP), action.cap, jnp.zeros_like(action.cap))
    cap = jnp.where(ok_cap & ~jnp.isnan(action.cap), action.cap, nan)
    scale = jnp.where(
        jnp.isfinite(action.ladder_scale) & (action.ladder_scale >= 0),
        jnp.minimum(action.ladder_scale, MAX_LADDER_SCALE),
        nan,
    )
    regen = jnp.where(jnp.isfinite(action.regen) & (action.regen >= 0), jnp.minimum(action.regen, MAX_MAGNITUDE), nan)
    return GovAction(cap, scale, regen)


def _regen_layer(game):
    for layer in game.layers:
        if isinstance(layer, PT.PerturbLayer) and "regen_set" in layer.types:
            return layer
    return None


def apply_action(game, state, action: GovAction, slot: int | None, turn: jax.Array):
    """THE one function applying a GovAction to one arena (built-in rule and live host alike).

    slot: the regulator's reserved pact slot (static) or None (no pact table: caps ignored);
    turn: the turn the action binds from. Returns (state, applied GovAction: NaN where a field
    was not taken or could not apply)."""
    dt = state.wealth.dtype
    a = valid(GovAction(*(jnp.asarray(x, dt) for x in action)))
    turn = jnp.asarray(turn, jnp.int32)
    gs = state.extra.get(GOV)
    nan = jnp.full((), jnp.nan, dt)
    if gs is None or slot is None:
        a = a._replace(cap=nan)
    if gs is None:
        a = a._replace(ladder_scale=nan)
    if gs is not None:
        pk = gs.pacts
        if slot is not None:
            pk = P.impose(pk, slot, a.cap, turn, put=jnp.isfinite(a.cap), lift=a.cap == jnp.inf)
        scale = jnp.where(jnp.isnan(a.ladder_scale), gs.scale, a.ladder_scale.astype(gs.scale.dtype))
        state = dataclasses.replace(state, extra={**state.extra, GOV: dataclasses.replace(gs, pacts=pk, scale=scale)})
    layer = _regen_layer(game)
    if layer is None:
        a = a._replace(regen=nan)
    else:
        fire = ~jnp.isnan(a.regen)
        spec = PT.PerturbParams(
            code=jnp.int32(PT.type_code("regen_set")),
            trigger=jnp.int32(PT.MANUAL),
            turn=jnp.int32(0),
            variable=jnp.int32(0),
            op=jnp.int32(0),
            level=jnp.zeros((), dt),
            value=jnp.where(fire, a.regen, 0.0),
            mode=jnp.int32(0),
            player=jnp.int32(ALL),
            index=jnp.int32(0),
        )
        fired, _ = PT.apply_perturbation(game, state, spec, None)
        state = jax.tree_util.tree_map(lambda x, y: jnp.where(fire, x, y), fired, state)
    return state, a


def begin(game, turn, state, pp: AgentParams, memory: dict, slot: int | None):
    """Start of turn: apply the pending action (:func:`apply_action`), clear it, record what
    was applied in memory. -> (state, memory, applied GovAction: the turn record's row)."""
    dt = state.wealth.dtype
    state, a = apply_action(game, state, memory["pending"], slot, turn)
    did = ~(jnp.isnan(a.cap) & jnp.isnan(a.ladder_scale) & jnp.isnan(a.regen))
    memory = {
        "pending": no_action(dt),
        "cap": jnp.where(jnp.isnan(a.cap), memory["cap"], jnp.where(a.cap == jnp.inf, jnp.nan, a.cap)),
        "scale": jnp.where(jnp.isnan(a.ladder_scale), memory["scale"], a.ladder_scale),
        "regen": jnp.where(jnp.isnan(a.regen), memory["regen"], a.regen),
        "last": jnp.where(did, turn, memory["last"]).astype(jnp.int32),
        "count": memory["count"] + did.astype(jnp.int32),
    }
    return state, memory, a


def set_pending(state, plugin_index: int, action: GovAction):
    """Write ``action`` as plugin ``plugin_index``'s pending action (the live host, between
    turns): applied at the start of the next turn, then cleared. Works on one arena's state or
    a batch (each field broadcast to the stored leaf's shape, e.g. float[B] per arena).
    ValueError when that plugin holds no pending action (not a governance agent)."""
    mems = list(state.extra.get(NAME, ()))
    if (
        not 0 <= plugin_index < len(mems)
        or not isinstance(mems[plugin_index], dict)
        or "pending" not in mems[plugin_index]
    ):
        raise ValueError(f"plugin_index: plugins[{plugin_index}] is not a governance agent of this game")
    old = mems[plugin_index]["pending"]
    new = GovAction(*(jnp.broadcast_to(jnp.asarray(x, o.dtype), o.shape) for x, o in zip(action, old, strict=True)))
    mems[plugin_index] = {**mems[plugin_index], "pending": new}
    return dataclasses.replace(state, extra={**state.extra, NAME: tuple(mems)})
