"""The perturbation engine (004_* A.1.1, Table A.1) as a turn layer, written for one arena.

Perturbation types are a registry (kernels/perturb_registry.py: one ``apply`` function plus
one ``register_perturbation`` call). The eight of Table A.1 (kernels/perturb_types.py) act on
the arena at the start of a turn, before players observe:

=====================  ==================================================================
``regen_shock``        regeneration rate r <- r * value                 (engine ``regen_rate``)
``regen_set``          r <- value                                       (engine ``regen_rate``)
``commons_shock``      stock S <- max(S + value, 0)                     (engine ``stock``)
``capacity_shock``     carrying capacity K <- K * value                 (engine ``capacity``)
``wealth_shock``       w <- w * value (mode 0) or max(w + value, 0) (mode 1), one player or all
``strategy_override``  the player's decision function <- Game.policies[index], from now on
``observability_flip`` visible[index] <- not visible (mode 0), True (mode 1), False (mode 2)
``threshold_shift``    collapse threshold <- max(T + value, 0) (mode 0) or value (mode 1)
=====================  ==================================================================

Static: the number of slots and the SET of types present (``PerturbLayer``); only the
branches of the types present are compiled. Dynamic (``PerturbParams``, leaves of shape
[P]): each slot's type code, trigger kind, turn, trigger variable, operator, level, value,
mode, player and index. Sweeping shock size, timing or thresholds therefore compiles once.

Mutable engine numbers (r, K, threshold) and the visibility mask live in
``state.extra["perturb"]`` as the arena's *effective* values, initialised from params; the
layer's ``params`` hook substitutes them into the params every other kernel reads, so
engines, the observability layer and policies need no change.

Triggers (evaluated at the start of each turn on the state as it stands, before any
perturbation of that turn applies): ``turn`` fires at the start of turn ``turn``;
``threshold`` fires the first turn ``TRIGGER_VARS[variable] OP level`` holds; ``manual``
never fires by itself (the owner fires it, :func:`apply_perturbation`). Each slot fires at
most once (the fired-once-then-dedup rule); the slots due in one turn apply in list order.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from . import perturb_types as _builtin  # noqa: F401  (the eight built-in types register on import)
from .bounds import MAX_MAGNITUDE
from .layers import Layer
from .metrics import gini
from .observe import env_values
from .params import ENV_VARS, farr
from .perturb_registry import ALL, View, perturbation_type, type_code, type_names
from .perturb_registry import supported as supported  # re-exported: the host asks perturb.supported(engine, type)
from .state import still_playing


def __getattr__(name: str):
    """``TYPES``, ``TYPE_CODE``, ``REQUIRES``, ``ENGINE_FIELDS``: views of the registry as
    it is when read (never a copy taken at import)."""
    if name == "TYPES":
        return type_names()
    if name == "TYPE_CODE":
        return {t: i for i, t in enumerate(type_names())}
    if name == "REQUIRES":
        return {t: perturbation_type(t).requires for t in type_names()}
    if name == "ENGINE_FIELDS":
        return {t: perturbation_type(t).engine_field for t in type_names() if perturbation_type(t).engine_field}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


TRIGGER_KINDS: tuple[str, ...] = ("turn", "threshold", "manual")
TURN, THRESHOLD, MANUAL = 0, 1, 2
#: threshold-trigger variables: engine ones (as observed, true values) and wealth statistics.
ENGINE_TRIGGER_VARS: tuple[str, ...] = ("commonsStock", "commonsRatio", "regenRate", "capitalStock", "pollutionLevel")
STAT_TRIGGER_VARS: tuple[str, ...] = ("giniWealth", "meanWealth", "minWealth", "totalHarvest")
TRIGGER_VARS: tuple[str, ...] = ENGINE_TRIGGER_VARS + STAT_TRIGGER_VARS
OPS: tuple[str, ...] = ("<", "<=", ">", ">=")


class PerturbParams(eqx.Module):
    """Dynamic numbers of the perturbation slots (every leaf [P]; scalars for one slot)."""

    code: jax.Array  # int32, index into TYPES
    trigger: jax.Array  # int32, TURN | THRESHOLD | MANUAL
    turn: jax.Array  # int32, turn trigger: fire at the start of this turn (1-based)
    variable: jax.Array  # int32, threshold trigger: index into TRIGGER_VARS
    op: jax.Array  # int32, threshold trigger: index into OPS
    level: jax.Array  # float, threshold trigger: compared against
    value: jax.Array  # float, factor / amount / new value / shift
    mode: jax.Array  # int32, type-specific variant (wealth: 0 x, 1 +; flip: 0/1/2; threshold: 0 +, 1 =)
    player: jax.Array  # int32, target player or ALL
    index: jax.Array  # int32, strategy index (override) or OBS_VARS index (flip)


def trigger_values(game, state, params) -> jax.Array:
    """Values of TRIGGER_VARS for one arena (float[len(TRIGGER_VARS)]; NaN where undefined)."""
    env = env_values(game, state, params)
    vals = [env[ENV_VARS.index(v)] for v in ENGINE_TRIGGER_VARS]
    w = state.wealth
    vals += [gini(w), jnp.mean(w), jnp.min(w), jnp.sum(state.last_actual)]
    return jnp.stack([farr(v) for v in vals])


def compare(x: jax.Array, op: jax.Array, level: jax.Array) -> jax.Array:
    """x OP level with OP a dynamic code; False when x is NaN."""
    return jnp.select([op == 0, op == 1, op == 2], [x < level, x <= level, x > level], x >= level)


@dataclass(frozen=True)
class PerturbLayer(Layer):
    """The perturbation layer: ``n_slots`` padded slots of the static set ``types``."""

    types: tuple[str, ...] = ()  # the registered types compiled in (bdpd_jax.prepare.perturbations.perturb_layer)
    n_slots: int = 0
    name: str = "perturb"

    @property
    def fields(self) -> tuple[str, ...]:
        fields = {perturbation_type(t).engine_field for t in self.types}
        return tuple(sorted(f for f in fields if f is not None))

    # --- state and effective params ---------------------------------------------------
    def init(self, game, params) -> dict:
        eng = game.engine
        return {
            "fired": jnp.zeros((self.n_slots,), bool),
            "engine": {f: farr(eng.get_param(params.engine, f)) for f in self.fields},
            "visible": jnp.asarray(params.obs.visible, bool),
        }

    def effective_params(self, game, state, params):
        mine = state.extra[self.name]
        ep = params.engine
        for f in self.fields:
            ep = game.engine.set_param(ep, f, mine["engine"][f])
        obs = dataclasses.replace(params.obs, visible=mine["visible"])
        return dataclasses.replace(params, engine=ep, obs=obs)

    # --- the turn hook ----------------------------------------------------------------
    def begin(self, game, key, turn, state, params):
        pp: PerturbParams = params.extra[self.name]
        mine = state.extra[self.name]
        live = still_playing(state, params)
        if self.n_slots == 0:
            return state, {}
        vals = trigger_values(game, state, self.effective_params(game, state, params))
        x = vals[jnp.clip(pp.variable, 0, len(TRIGGER_VARS) - 1)]
        at_turn = (pp.trigger == TURN) & (pp.turn == turn)
        at_level = (pp.trigger == THRESHOLD) & compare(x, pp.op, pp.level)
        due = live & ~mine["fired"] & (at_turn | at_level)

        def body(st, slot_due):
            slot, d = slot_due
            st, target, value = _apply(self, game, st, slot, d)
            return st, (target, value)

        state, (target, value) = jax.lax.scan(body, state, (pp, due))
        mine = dict(state.extra[self.name], fired=mine["fired"] | due)
        state = dataclasses.replace(state, extra={**state.extra, self.name: mine})
        return state, {"fired": due, "code": pp.code, "target": target, "value": value}


def _apply(layer: PerturbLayer, game, state, slot: PerturbParams, fire: jax.Array):
    """Apply one slot when ``fire``. Returns (state, target int32[], logged value float[]).

    Each type of the layer computes the arena as if it fired (its registered ``apply``);
    the result is kept where the slot is of that type and fires. target: the player (or
    ALL) for wealth/strategy, the OBS_VARS index for a flip, -1 otherwise; value: the
    acted-on quantity after the change (total wealth of the targets, the new strategy
    index, the new visibility 0/1).
    """
    # every factor, amount, new value and shift within +-MAX_MAGNITUDE (kernels/bounds.py)
    slot = dataclasses.replace(slot, value=jnp.clip(slot.value, -MAX_MAGNITUDE, MAX_MAGNITUDE).astype(slot.value.dtype))
    mine = state.extra[layer.name]
    view = View(
        engine=dict(mine["engine"]),
        visible=mine["visible"],
        engine_state=state.engine,
        wealth=state.wealth,
        strategy=state.strategy,
    )
    dt = state.wealth.dtype
    n = state.wealth.shape[0]
    who = (slot.player == ALL) | (jnp.arange(n) == slot.player)
    target = jnp.asarray(-1, jnp.int32)
    logged = jnp.zeros((), dt)
    for t in layer.types:
        hit = fire & (slot.code == type_code(t))
        changes, val, tgt = perturbation_type(t).apply(game, view, slot, who)
        new: dict[str, Any] = {}
        for k, v in changes.items():
            old = getattr(view, k)
            if k == "engine":
                new[k] = {**old, **{f: jnp.where(hit, x, old[f]) for f, x in v.items()}}
            else:
                new[k] = jax.tree_util.tree_map(functools.partial(jnp.where, hit), v, old)
        view = view._replace(**new)
        logged = jnp.where(hit, jnp.asarray(val, dt), logged)
        if tgt is not None:
            target = jnp.where(hit, jnp.asarray(tgt, jnp.int32), target)

    mine = dict(mine, engine=view.engine, visible=view.visible)
    state = dataclasses.replace(
        state,
        engine=view.engine_state,
        wealth=view.wealth,
        strategy=view.strategy,
        extra={**state.extra, layer.name: mine},
    )
    return state, target, logged


def layer_of(game) -> PerturbLayer:
    for layer in game.layers:
        if isinstance(layer, PerturbLayer):
            return layer
    raise ValueError(
        "apply_perturbation: this game has no perturbation layer; build it with "
        "build(config, perturbable=True) or give the config a perturbations list"
    )


def apply_perturbation(game, state, spec: PerturbParams, params):
    """Fire one perturbation now, whatever its trigger (the owner's ``POST .../perturb``).

    ``spec`` is one slot (scalar leaves; :func:`bdpd_jax.prepare.perturbations.compile_spec` makes it from a
    config spec). Pure: returns ``(state, record)`` with ``record = {code, target, value}``;
    the slot's fired flag is not touched (owner firings are not deduplicated). Its type must
    be among the layer's static types (a ValueError at trace time otherwise is not possible
    for dynamic codes: a code outside them is a no-op).
    """
    layer = layer_of(game)
    state, target, value = _apply(layer, game, state, spec, jnp.asarray(True))
    return state, {"code": spec.code, "target": target, "value": value}
