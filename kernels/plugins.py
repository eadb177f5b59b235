"""Governance plugins (000_* 2.4 "third parties write governance plugins"): a registry and
the turn layer that runs them, written for one arena.

A plugin type is one ``act`` function (plus ``init`` for its memory) and one
:func:`register_plugin` call. At the end of each turn, after the pact check and the automatic
sanctions (the governance layer), each plugin observes the arena (:class:`PluginView`: the
five metrics of this turn's decisions, stock, harvests, violations, wealths) and its own
memory, and acts through :class:`Effects`: fines imposed on players and the costs
players pay to impose them (costs are taken first, then fines). The deductions follow the one
wealth floor of every deduction (docs/semantics.md §11). A plugin type may also register a
``begin`` hook, run at the start of each turn before the players observe: the governance
agent's mandates (its second effect record, ``kernels.governance_agent.GovAction``: a harvest
cap pact binding all players, the sanction ladders' scale, a ``regen_set``) are applied there.
The same layer runs in a batch and in the live host (one kernel).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp

from .bounds import MAX_MAGNITUDE
from .governance import NAME as GOV
from .layers import Layer
from .metrics import governance_metrics, over_share
from .observe import env_values
from .params import ENV_VARS
from .registry import Registry

NAME = "plugins"


class PluginView(NamedTuple):
    """What a plugin observes at the end of a turn (one arena)."""

    turn: jax.Array  # int32[]
    stock: jax.Array  # float[], the engine's stock after the dynamics
    regen: jax.Array  # float[], this turn's regeneration
    actual: jax.Array  # float[N], this turn's actual harvests
    over: jax.Array  # bool[N], actual > regen / N + eps (the metrics' over-share rule)
    violated: jax.Array  # bool[N], the player broke a pact this turn
    against: jax.Array  # bool[N, N], [i, j]: i broke a pact that binds j (j a party, j != i)
    wealth: jax.Array  # float[N], after the harvest and the automatic sanctions
    metrics: dict[str, jax.Array]  # the five metrics of 000_* Table 2.1 on this turn's decisions (before plugins)
    stock_ratio: jax.Array | float = jnp.nan  # float[], the engine's commonsRatio after the dynamics (NaN: none)


class Effects(NamedTuple):
    """What a plugin does this turn, with who imposed what on whom (the sanction rows)."""

    fines: jax.Array  # float[N, N], [j, i]: the fine j imposed on i (0 = none)
    costs: jax.Array  # float[N, N], [j, i]: what j paid to fine i
    reason: jax.Array  # int32[N], per fined player: the plugin's reason code (1-based; 0 = none)


class PluginType(NamedTuple):
    name: str
    init: Callable[[Any, Any], Any]  # (game, plugin params) -> memory pytree
    act: Callable[..., tuple[Effects, Any]]  # (game, view, plugin params, memory) -> (Effects, memory)
    reasons: tuple[str, ...] = ()  # names of reason codes 1, 2, ...
    # (game, turn, state, plugin params, memory, slot) -> (state, memory, record); slot: the
    # plugin's reserved pact slot (static int) or None. Start of turn, before players observe.
    begin: Callable[..., tuple[Any, Any, Any]] | None = None
    reserves_pact: bool = False  # holds one reserved slot of the pact table (a regulator's pact)


#: the plugin type registry (kernels/registry.py): kernel entries; the config's spec models
#: are bdpd_jax.config.plugins.PLUGIN_SPECS, filled by the same one call
PLUGINS: Registry[PluginType] = Registry("type", "plugin type")


def register_plugin(
    name: str,
    act: Callable[..., tuple[Effects, Any]],
    init: Callable[[Any, Any], Any] = lambda game, pp: (),
    reasons: tuple[str, ...] = (),
    *,
    begin: Callable[..., tuple[Any, Any, Any]] | None = None,
    reserves_pact: bool = False,
) -> PluginType:
    """Register a governance plugin type (the kernel side; bdpd_jax.config.plugins adds the config)."""
    return PLUGINS.register(name, PluginType(name, init, act, tuple(reasons), begin, bool(reserves_pact)))


plugin_names = PLUGINS.names  # registered names, in registration order (read when called)
plugin_type = PLUGINS.get_entry  # an entry by name (ValueError naming ``type`` and the known)


def take(wealth: jax.Array, amount: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The wealth floor: a deduction takes at most what the player holds. -> (wealth, taken)."""
    taken = jnp.minimum(amount, jnp.maximum(wealth, 0.0))
    return wealth - taken, taken


@dataclass(frozen=True)
class PluginLayer(Layer):
    """The static list of plugin types, in config order (params and memory are tuples alike)."""

    types: tuple[str, ...] = ()
    name: str = NAME

    def init(self, game: Any, params: Any) -> tuple[Any, ...]:
        pp = params.extra[NAME]
        return tuple(plugin_type(t).init(game, p) for t, p in zip(self.types, pp, strict=True))

    def pact_slot(self, i: int, n_slots: int) -> int | None:
        """Plugin i's reserved pact slot: the last slots of the table, in plugin order
        (bdpd_jax.prepare.governance adds them), or None."""
        reserving = [k for k, t in enumerate(self.types) if plugin_type(t).reserves_pact]
        return n_slots - len(reserving) + reserving.index(i) if i in reserving else None

    def begin(self, game: Any, key: jax.Array, turn: jax.Array, state: Any, params: Any) -> tuple[Any, dict[str, Any]]:
        hooked = [i for i, t in enumerate(self.types) if plugin_type(t).begin is not None]
        if not hooked:
            return state, {}
        gov = state.extra.get(GOV)
        n_slots = gov.pacts.n_slots if gov is not None else 0
        memories = list(state.extra[NAME])
        records: list[Any] = [None] * len(self.types)
        for i in hooked:
            pt = plugin_type(self.types[i])
            slot = self.pact_slot(i, n_slots) if gov is not None else None
            begin = cast(Callable[..., tuple[Any, Any, Any]], pt.begin)  # hooked: begin is set
            state, memories[i], records[i] = begin(game, turn, state, params.extra[NAME][i], memories[i], slot)
        state = dataclasses.replace(state, extra={**state.extra, NAME: tuple(memories)})
        return state, {"actions": tuple(records)}

    def after_harvest(
        self, game: Any, key: jax.Array, turn: jax.Array, state: Any, ctx: dict[str, Any], params: Any
    ) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        n = game.n_players
        dt = state.wealth.dtype
        actual, regen = ctx["actual"], ctx["regen"]
        playing = jnp.ones((n,), bool)
        sanctioned = ctx.get("sanctioned", ctx["sanction"] > 0)
        metrics = governance_metrics(
            actual, ctx["announced"], jnp.sum(sanctioned).astype(dt), regen, playing, ctx.get("share_defined", True)
        )
        ratio = env_values(game, state, params)[ENV_VARS.index("commonsRatio")]
        view = PluginView(
            turn=turn,
            stock=game.engine.stock(state.engine),
            regen=regen,
            actual=actual,
            over=over_share(actual, regen, n),
            violated=ctx.get("violators", jnp.zeros((n,), bool)),
            against=ctx.get("against", jnp.zeros((n, n), bool)),
            wealth=state.wealth,
            metrics=metrics,
            stock_ratio=ratio.astype(dt),
        )
        memories, records = [], []
        wealth = state.wealth
        fined = jnp.zeros((n,), dt)
        paid = jnp.zeros((n,), dt)
        for i, t in enumerate(self.types):
            eff, mem = plugin_type(t).act(
                game, view._replace(wealth=wealth), params.extra[NAME][i], state.extra[NAME][i]
            )
            eff = eff._replace(
                fines=jnp.clip(eff.fines, 0.0, MAX_MAGNITUDE),  # kernels/bounds.py
                costs=jnp.clip(eff.costs, 0.0, MAX_MAGNITUDE),
            )
            wealth, cost = take(wealth, jnp.sum(eff.costs, axis=1))
            wealth, fine = take(wealth, jnp.sum(eff.fines, axis=0))
            fined, paid = fined + fine, paid + cost
            memories.append(mem)
            records.append({"fines": eff.fines, "costs": eff.costs, "reason": eff.reason})
        state = dataclasses.replace(state, wealth=wealth, extra={**state.extra, NAME: tuple(memories)})
        ctx = {**ctx, "sanction": ctx["sanction"] + fined, "sanctioned": sanctioned | (fined > 0)}
        record = {"plugins": tuple(records), "player_extra": {"sanction_cost": paid}}
        return state, ctx, record
