"""``voluntary_sanction`` (Yoon & Armsworth 2025 style): players pay a cost to fine others.

At the end of a turn, a player i who broke a pact or over-harvested (actual > regen/N + eps)
this turn may be fined by any other player j whose ``sanctioner`` rule says so:

- ``never``; ``always``;
- ``if_richer_than``: j's wealth (after the harvest and automatic sanctions) > its threshold;
- ``reciprocal``: i has fined j before (in this run), or i broke a pact j is a party to.

j pays ``cost`` per player it fines and imposes ``fine`` on each, and acts only if it can pay
for every player it would fine (wealth >= cost x count); fines then follow the wealth floor.
Dynamic: cost, fine, each player's rule and threshold (a sweep compiles once). Live players
sanction through the ``sanction(target, reason)`` tool, under the same target and cost rules.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .plugins import Effects, PluginView

RULES: tuple[str, ...] = ("never", "always", "if_richer_than", "reciprocal")
NEVER, ALWAYS, IF_RICHER, RECIPROCAL = 0, 1, 2, 3
REASONS: tuple[str, ...] = ("pact_violation", "over_harvest")  # codes 1, 2


class VoluntaryParams(eqx.Module):
    cost: jax.Array  # float[], paid by the sanctioner per player fined
    fine: jax.Array  # float[], imposed on each player fined, per sanctioner
    rule: jax.Array  # int32[N], index into RULES
    threshold: jax.Array  # float[N], if_richer_than: the wealth above which the player sanctions


def init(game, pp: VoluntaryParams) -> dict:
    """Memory: ``fined`` bool[N, N], who has fined whom so far ([j, i]: j fined i); ``intent``
    bool[N, N], the live players' ``sanction(target)`` calls of this turn (written by the
    host between its decide and step phases; zeros in a batch run)."""
    z = jnp.zeros((game.n_players, game.n_players), bool)
    return {"fined": z, "intent": z}


def act(game, view: PluginView, pp: VoluntaryParams, memory: dict):
    """A live player's ``sanction(target)`` call counts as its rule saying so (the target
    condition and the cost rule still apply)."""
    n = game.n_players
    fined_before = memory["fined"]
    target = view.violated | view.over  # [N]
    rule = pp.rule[:, None]  # sanctioner j on rows
    reciprocal = fined_before.T | view.against.T  # [j, i]: i fined j before, or i broke a pact binding j
    ok = jnp.select(
        [rule == ALWAYS, rule == IF_RICHER, rule == RECIPROCAL],
        [jnp.ones((n, n), bool), jnp.broadcast_to((view.wealth > pp.threshold)[:, None], (n, n)), reciprocal],
        jnp.zeros((n, n), bool),
    )
    want = (ok | memory["intent"]) & target[None, :] & ~jnp.eye(n, dtype=bool)
    count = jnp.sum(want, axis=1).astype(view.wealth.dtype)
    can = view.wealth >= pp.cost * count  # pays for all of them, or fines nobody
    imposed = want & can[:, None]
    dt = view.wealth.dtype
    fines = jnp.where(imposed, pp.fine.astype(dt), 0.0)
    costs = jnp.where(imposed, pp.cost.astype(dt), 0.0)
    reason = jnp.where(jnp.any(imposed, axis=0), jnp.where(view.violated, 1, 2), 0).astype(jnp.int32)
    memory = {"fined": fined_before | imposed, "intent": jnp.zeros_like(memory["intent"])}
    return Effects(fines=fines, costs=costs, reason=reason), memory
