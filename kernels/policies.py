"""Decision functions: the five built-in heuristics of Table A.3, ``idle``, ``threshold_taker``
(takes its share of the engine's sustainability threshold, known as a rule like the engine's
reference stock: GovSim's sustainable baseline), and user policies.

Every policy is written for one player: ``decide(obs, memory, ctx) -> (harvest, memory)``,
with ``obs`` the player's observation (NaN = not observable), ``memory`` a private float
vector and ``ctx`` what the player knows of itself (true wealth, its parameters, a uniform
draw and a ``jax.random`` key). Policies are separate from the turn: they produce requests,
the step consumes requests from any source.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np

from . import unroll
from .observe import capacity

Obs = dict[str, jax.Array]  # observation name -> float[] (float[N] for othersWealth, othersHarvest)
Ctx = dict[str, jax.Array]  # the decision context: key, wealth, unit, intensity, reference, u, ...
DecideFn = Callable[[Obs, jax.Array, Ctx], tuple[jax.Array, jax.Array]]


@dataclass(frozen=True)
class Policy:
    """A pure JAX decision function usable as a player: ``fn(obs, memory, key) -> (harvest, memory)``.

    ``obs`` maps each observation variable to a float (NaN when hidden; ``othersWealth`` and
    ``othersHarvest`` are float[N]), ``memory`` is float[memory_size] (zeros on turn 1) and
    ``key`` a ``jax.random`` key unique to (seed, arena, turn, player). The function is
    vmapped over players and arenas like the built-ins.
    """

    fn: Callable[[Obs, jax.Array, jax.Array], tuple[Any, Any]]
    name: str = "custom"
    memory_size: int = 4

    # Equal by (fn, name, memory_size) and immutable: copies (and the re-validated configs of
    # sweep points) are the same policy, so they share one Game and one compiled program.
    def __copy__(self) -> Policy:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Policy:
        return self

    def decide(self, obs: Obs, memory: jax.Array, ctx: Ctx) -> tuple[jax.Array, jax.Array]:
        h, mem = self.fn(obs, memory, ctx["key"])
        return jnp.asarray(h, memory.dtype), jnp.asarray(mem, memory.dtype).reshape(memory.shape)


@dataclass(frozen=True, eq=False)
class Builtin:
    """A built-in heuristic: a named decide function over (obs, memory, ctx)."""

    name: str
    fn: DecideFn = field(repr=False)
    memory_size: int = 0

    def decide(self, obs: Obs, memory: jax.Array, ctx: Ctx) -> tuple[jax.Array, jax.Array]:
        return self.fn(obs, memory, ctx)


def _present(x: jax.Array) -> jax.Array:
    return ~jnp.isnan(x)


def _capacity(ctx: Ctx) -> jax.Array:
    """capacity(w) in stock units: the engine's harvest unit x (1 + 0.05 w) (docs/semantics.md §9)."""
    return capacity(ctx["wealth"]) * ctx["unit"]


def _aggressive(obs: Obs, memory: jax.Array, ctx: Ctx) -> tuple[jax.Array, jax.Array]:
    cap = _capacity(ctx)
    s = obs["commonsStock"]
    h = jnp.where(_present(s), jnp.minimum(cap, ctx["intensity"] * s), cap)
    return h, memory


def conservative_fraction(obs: Obs, reference: jax.Array) -> jax.Array:
    """f(rho) of the three-tier rule; rho from commonsStock/reference, else commonsRatio.

    With neither observable the middle tier (0.35) is used: no signal, no extreme.
    """
    s = obs["commonsStock"]
    rho = jnp.where(_present(s), s / reference, obs["commonsRatio"])
    f = jnp.where(rho > 0.6, 0.60, jnp.where(rho > 0.4, 0.35, 0.10))
    return jnp.where(_present(rho), f, 0.35)


def _conservative(obs: Obs, memory: jax.Array, ctx: Ctx) -> tuple[jax.Array, jax.Array]:
    return _capacity(ctx) * conservative_fraction(obs, ctx["reference"]), memory


def _adaptive(obs: Obs, memory: jax.Array, ctx: Ctx) -> tuple[jax.Array, jax.Array]:
    # memory: [previous observed stock (NaN = none yet), consecutive falls]
    s = obs["commonsStock"]
    prev, falls = memory[0], memory[1]
    fell = _present(s) & (memory[2] > 0) & (s < prev)
    falls = jnp.where(fell, falls + 1.0, 0.0)
    f = ctx["reduction_factor"]
    cut = jnp.where(falls >= 2.0, 0.30 * f, jnp.where(falls >= 1.0, 0.20 * f, 0.0))
    h = _capacity(ctx) * 0.40 * jnp.clip(1.0 - cut, 0.0, 1.0)
    seen = _present(s)
    new = jnp.stack([jnp.where(seen, s, prev), falls, jnp.where(seen, 1.0, memory[2])])
    return h, new


def _random(obs: Obs, memory: jax.Array, ctx: Ctx) -> tuple[jax.Array, jax.Array]:
    return _capacity(ctx) * ctx["u"], memory


def _rcp(obs: Obs, memory: jax.Array, ctx: Ctx) -> tuple[jax.Array, jax.Array]:
    # memory: [peak capital observed so far]. Harvest = conservative x C/C_peak x C/(C+P):
    # cut in proportion as capital falls from its peak and as pollution grows against capital.
    c, p = obs["capitalStock"], obs["pollutionLevel"]
    base = _capacity(ctx) * conservative_fraction(obs, ctx["reference"])
    peak = jnp.maximum(memory[0], jnp.where(_present(c), c, 0.0))
    tiny = jnp.finfo(base.dtype).tiny
    fc = jnp.where(peak > 0, jnp.clip(c / jnp.maximum(peak, tiny), 0.0, 1.0), 1.0)
    fp = jnp.where(_present(p), jnp.clip(c / jnp.maximum(c + p, tiny), 0.0, 1.0), 1.0)
    h = jnp.where(_present(c), base * fc * fp, base)
    return h, peak[None]


def _idle(obs: Obs, memory: jax.Array, ctx: Ctx) -> tuple[jax.Array, jax.Array]:
    return jnp.zeros_like(ctx["wealth"]), memory


def _threshold_taker(obs: Obs, memory: jax.Array, ctx: Ctx) -> tuple[jax.Array, jax.Array]:
    # a rule, not a guess: its share of the true sustainability threshold (kernels/sustainability.py),
    # like the engine's reference and unit in ctx; 0 where the engine defines none (Seneca)
    f = ctx["threshold"]
    return jnp.where(_present(f), f, jnp.zeros_like(ctx["wealth"])), memory


BUILTINS: dict[str, Builtin] = {
    b.name: b
    for b in (
        Builtin("aggressive", _aggressive),
        Builtin("conservative", _conservative),
        Builtin("adaptive", _adaptive, memory_size=3),
        Builtin("random", _random),
        Builtin("rcp", _rcp, memory_size=1),
        Builtin("idle", _idle),
        Builtin("threshold_taker", _threshold_taker),
    )
}


def decide_all(
    policies: tuple[Policy | Builtin, ...],
    obs: Obs,
    memory: jax.Array,
    strategy: jax.Array,
    ctx: Ctx,
    candidates: tuple[tuple[int, ...], ...] | None = None,
    slots: tuple[tuple[int, int], ...] | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Each player's strategies decide for it; the one in force is kept.

    obs: name -> [N, ...]; memory: float[K, M], one row per ``slots`` entry (strategy,
    player), the pairs that keep a memory (``Game.memory_slots``); strategy: int32[N]; ctx:
    name -> [N, ...]; candidates: per player, the strategy indices that can ever be in force
    for it (its own and any ``strategy_override`` target; None = all). Written per player,
    so that every operation runs on one value per arena, which XLA:CPU vectorises across
    the batch (a [B, N] array with a short inner player axis it does not). Every candidate
    keeps its memory up to date even while not in force, so an override switches to a
    policy that has followed the game all along. Returns (requests float[N], memory float[K, M]).
    """
    n = strategy.shape[0]
    if not unroll.players(n):
        return _decide_array(policies, obs, memory, strategy, ctx, candidates, slots)
    row = {sp: k for k, sp in enumerate(slots or ())}
    rows = [memory[k] for k in range(memory.shape[0])]
    requests: list[jax.Array] = []
    for p in range(n):
        o_p = jax.tree_util.tree_map(operator.itemgetter(p), obs)
        c_p = jax.tree_util.tree_map(operator.itemgetter(p), ctx)
        h_p: jax.Array | None = None
        for s in candidates[p] if candidates is not None else range(len(policies)):
            pol = policies[s]
            m = max(pol.memory_size, 0)
            k = row.get((s, p))
            h, new = pol.decide(o_p, memory[k, :m] if k is not None else jnp.zeros((0,), memory.dtype), c_p)
            if k is not None:
                rows[k] = jnp.concatenate([new, memory[k, m:]]) if m < memory.shape[1] else new
            h_p = h if h_p is None else jnp.where(strategy[p] == s, h, h_p)
        requests.append(cast(jax.Array, h_p))  # every player has at least one candidate
    new_memory = jnp.stack(rows) if rows else memory
    return jnp.stack(requests), new_memory


def _decide_array(
    policies: tuple[Policy | Builtin, ...],
    obs: Obs,
    memory: jax.Array,
    strategy: jax.Array,
    ctx: Ctx,
    candidates: tuple[tuple[int, ...], ...] | None,
    slots: tuple[tuple[int, int], ...] | None,
) -> tuple[jax.Array, jax.Array]:
    """:func:`decide_all` in array form (many players): each strategy decides for all its
    candidate players at once (vmapped over them), then the one in force is selected per
    player. The same operations on the same values as the unrolled form."""
    n = strategy.shape[0]
    cands = candidates if candidates is not None else (tuple(range(len(policies))),) * n
    row = {sp: k for k, sp in enumerate(slots or ())}
    k_rows, width = memory.shape
    first = np.asarray([c[0] for c in cands])
    blocks: list[jax.Array] = []  # new memory rows
    order: list[np.ndarray] = []  # their row indices
    harvests: dict[int, jax.Array] = {}  # harvests [N] by strategy
    for s, pol in enumerate(policies):
        who = np.asarray([p for p in range(n) if s in cands[p]], np.int32)
        if who.size == 0:
            continue
        m = max(pol.memory_size, 0)
        rows = np.asarray([row.get((s, int(p)), -1) for p in who], np.int32)
        take = functools.partial(_take, idx=who)
        keep = bool(m) and bool((rows >= 0).all())  # Game.memory_slots: all of them or none
        mem_s = _take(memory, rows)[:, :m] if keep else jnp.zeros((who.size, 0), memory.dtype)
        h, new = jax.vmap(pol.decide)(jax.tree_util.tree_map(take, obs), mem_s, jax.tree_util.tree_map(take, ctx))
        if keep:
            blocks.append(jnp.concatenate([new, _take(memory, rows)[:, m:]], axis=1) if m < width else new)
            order.append(rows)
        harvests[s] = _spread(h, who, n)
    # the unrolled where-chain: the first candidate, replaced by the strategy in force
    (_, requests), *others = harvests.items()  # every player has at least one candidate
    for s, h in others:
        requests = jnp.where(jnp.asarray(first == s), h, requests)
    for s, h in harvests.items():
        later = np.asarray([s in cands[p] and cands[p][0] != s for p in range(n)])
        requests = jnp.where(jnp.asarray(later) & (strategy == s), h, requests)
    new_memory = memory
    if blocks:
        rows = np.concatenate(order)
        stacked = jnp.concatenate(blocks, axis=0)
        inv = np.full((k_rows,), -1, np.int32)
        inv[rows] = np.arange(rows.size)
        if (inv >= 0).all():
            new_memory = _take(stacked, inv)
        else:  # rows no strategy rewrote keep their value
            new_memory = jnp.where(jnp.asarray(inv >= 0)[:, None], _take(stacked, np.maximum(inv, 0)), memory)
    return requests, new_memory


def _take(x: jax.Array, idx: np.ndarray) -> jax.Array:
    """x[idx] for static indices; a slice when they are a contiguous run (no gather)."""
    if idx.size and (np.diff(idx) == 1).all():
        return x[int(idx[0]) : int(idx[0]) + idx.size]
    return x[idx]


def _spread(h: jax.Array, who: np.ndarray, n: int) -> jax.Array:
    """float[N] with h at the players ``who`` (static); the other entries are never read."""
    if (np.diff(who) == 1).all():
        return jnp.pad(h, (int(who[0]), n - int(who[0]) - who.size))
    pos = np.zeros((n,), np.int32)
    pos[who] = np.arange(who.size)
    return h[pos]
