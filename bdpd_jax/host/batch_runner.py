"""``LockstepBatch``: live arenas of one Game advanced in lockstep, one batched kernel call per
phase per turn (the turn is described in :mod:`bdpd_jax.host.arena`); shared by
:class:`~bdpd_jax.host.arena.Arena` and :class:`~bdpd_jax.host.live_batch.LiveBatch`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from bdpd_jax.kernels.governance import NAME as GOV
from bdpd_jax.host.agent_calls import ask_agent
from bdpd_jax.host.agents.base import AgentResult
from bdpd_jax.host.governance_agent import govern
from bdpd_jax.host.programs import has_governance, programs
from bdpd_jax.host.records import record_rows

if TYPE_CHECKING:
    from bdpd_jax.host.arena import Arena


def slice_batch(tree, b: int):
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[..., b], tree)


def _stack(trees: list):
    return jax.tree_util.tree_map(lambda *xs: np.stack(xs, axis=-1), *trees)


class LockstepBatch:
    """Arenas of one Game advanced in lockstep: one batched kernel call per phase per turn."""

    def __init__(self, arenas: list[Arena]) -> None:
        if not arenas:
            raise ValueError("arenas: need at least one arena")
        for a in arenas:
            if a.status == "waiting":
                a.start()
            if a._batch is not None and a._batch is not self:
                raise ValueError(f"arenas: arena {a.arena_id!r} is already in another batch")
        game = arenas[0].game
        for k, a in enumerate(arenas):
            if a.game != game:
                raise ValueError(f"arenas[{k}]: its game (players, strategies, engine, layers) differs from "
                                 "arenas[0]'s; a batch runs one compiled program")
            if a.turn != arenas[0].turn:
                raise ValueError(f"arenas[{k}]: at turn {a.turn}, arenas[0] at {arenas[0].turn}")
        self.arenas = arenas
        self.game = game
        self.gov = has_governance(game)
        init, self._decide, self._step = programs(game)
        self.keys = jnp.stack([a.key for a in arenas], axis=-1)
        self.params = jax.tree_util.tree_map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs], axis=-1),
                                             *[a.params for a in arenas])
        self.state = init(self.params)
        # stock units per harvest unit, per arena: an agent's fallback harvest (0.2 x capacity,
        # agents/base.py) is in the heuristics' units and is scaled as the built-ins' is
        self.units = np.broadcast_to(np.asarray(game.engine.harvest_unit(self.params.engine), np.float64),
                                     (len(arenas),))
        # per arena, the players asked from outside (specs are fixed once an arena starts)
        self._external = [[i for i, s in enumerate(a.specs) if s.external] for a in arenas]
        for b, a in enumerate(arenas):
            a._batch, a._b = self, b

    def set_state(self, b: int, state) -> None:
        """Write arena b's (unbatched) state into the batch state."""
        self.state = jax.tree_util.tree_map(lambda x, v: jnp.asarray(x).at[..., b].set(jnp.asarray(v)),
                                            self.state, state)

    def set_pacts(self, b: int, table) -> None:
        """Write arena b's pact table into the batch state (a tool used between ticks)."""
        gs = self.state.extra[GOV]
        pk = jax.tree_util.tree_map(lambda x, v: jnp.asarray(x).at[..., b].set(jnp.asarray(v)), gs.pacts, table)
        self.state = dataclasses.replace(
            self.state, extra={**self.state.extra, GOV: dataclasses.replace(gs, pacts=pk)})

    async def tick(self) -> None:
        """One turn of every arena still playing."""
        arenas = self.arenas
        if all(a.done for a in arenas):
            return
        for a in arenas:
            a._in_tick = True
        try:
            await self._tick()
        finally:
            for a in arenas:
                a._in_tick = False

    async def _tick(self) -> None:
        arenas = self.arenas
        if any(a.governor is not None for a in arenas):  # the owners' governance agents act first
            self.state = await govern(self.state, arenas)
        sb, begun, obs, pacts_d, ahead = self._decide(self.keys, self.state, self.params)
        asking = any(self._external)  # observations are read only for players asked from outside
        obs_np = jax.tree_util.tree_map(np.asarray, obs) if asking else {}
        wealth = np.asarray(sb.wealth) if asking else None
        strategy = np.asarray(sb.strategy) if asking else None
        pk_b = jax.tree_util.tree_map(np.asarray, sb.extra[GOV].pacts) if self.gov else None
        pk_d = jax.tree_util.tree_map(np.asarray, pacts_d) if self.gov else None
        n, nb = sb.wealth.shape
        jobs, where = [], []
        overridden: list[set] = [set() for _ in arenas]
        for b, a in enumerate(arenas):
            if a.done:
                continue
            t = a.turn + 1
            a._announced = {}
            if a.registry is not None:
                a.registry.sync(slice_batch(pk_b, b))
            if not self._external[b]:
                continue
            asked = []
            for i in self._external[b]:
                if strategy[i, b] != a.external_index:  # strategy_override: a builtin decides
                    overridden[b].add(i)
                    continue
                asked.append(i)
            if not asked:
                continue
            envs = a.envelopes([a.specs[i].name for i in asked], {k: v[..., b] for k, v in obs_np.items()}, t)
            for i in asked:
                s = a.specs[i]
                jobs.append(ask_agent(a.agents[i], envs[s.name], float(wealth[i, b]), s.agentType))
                where.append((b, i))
        results = await asyncio.gather(*jobs)
        by_arena: list[dict[int, AgentResult]] = [{} for _ in arenas]
        for (b, i), r in zip(where, results):
            if r.fallback and self.units[b] != 1.0:
                r = dataclasses.replace(r, harvest=r.harvest * float(self.units[b]))
            by_arena[b][i] = r
        ext = np.zeros((n, nb), bool)
        ext_req = np.zeros((n, nb), np.float64)
        ext_ann = np.full((n, nb), np.nan)
        tools_by_arena: list[list] = [[] for _ in arenas]
        for b, a in enumerate(arenas):
            if a.registry is not None:
                a.registry.sync(slice_batch(pk_d, b))
            if a.done:
                continue
            t = a.turn + 1
            for i in sorted(by_arena[b]):
                r = by_arena[b][i]
                name = a.specs[i].name
                ext[i, b] = True
                ext_req[i, b] = r.harvest
                for act in r.actions:
                    res = a._dispatch(name, act, t)
                    tools_by_arena[b].append({"playerId": name, "action": act, "result": res})
                if name in a._announced:
                    ext_ann[i, b] = a._announced[name]
        pacts = _stack([a.registry.table for a in arenas]) if self.gov else None
        sb = with_sanction_intents(sb, arenas)
        dt = np.dtype(sb.wealth.dtype)  # numpy arguments: no eager jax op per array (same rounding)
        state, rec = self._step(self.keys, sb, begun, ext, ext_req.astype(dt), ext_ann.astype(dt), pacts, ahead,
                                self.params)
        self.state = state
        rows = record_rows(jax.tree_util.tree_map(np.asarray, rec))  # converted once for all arenas
        pk_new = jax.tree_util.tree_map(np.asarray, state.extra[GOV].pacts) if self.gov else None
        for b, a in enumerate(arenas):
            if a.done:
                continue
            r = rows[b]
            if a.registry is not None:
                a.registry.sync(slice_batch(pk_new, b))
            if not r.played:
                a.done = True
                continue
            t = r.turn
            a.turn = t
            line = a._record(t, r, by_arena[b], tools_by_arena[b], overridden[b])
            a.records.append(line)  # a bounded deque: the oldest record leaves
            if a.keep_records is not None:
                a.bus.forget_before(t - a.keep_records + 1)
            if a._writer is not None:
                a._writer.write(line)
            if r.collapsed or t >= a.max_turns:
                a.done = True


def with_sanction_intents(sb, arenas: list):
    """The live players' ``sanction(target)`` calls of this turn written into the plugins'
    ``intent`` memory (bool[N, N, B]) of the batch state; consumed by the step."""
    from bdpd_jax.kernels.plugins import NAME

    intents = [a.take_sanction_intents() for a in arenas]
    if not any(intents) or NAME not in sb.extra:
        return sb
    mems = list(sb.extra[NAME])
    for k, mem in enumerate(mems):
        if isinstance(mem, dict) and "intent" in mem:
            intent = np.array(mem["intent"])
            for b, calls in enumerate(intents):
                for j, i in calls:
                    intent[j, i, b] = True
            mems[k] = {**mem, "intent": jnp.asarray(intent)}
    return dataclasses.replace(sb, extra={**sb.extra, NAME: tuple(mems)})


__all__: list[str] = []
