"""``LockstepBatch``: live arenas of one Game advanced in lockstep, one batched kernel call per
phase per turn; shared by :class:`~bdpd_jax.host.live.arena.Arena` and
:class:`~bdpd_jax.host.live.live_batch.LiveBatch`. It works on each arena's run state
(:class:`~bdpd_jax.host.live.arena_run.ArenaRun`), never on the Arena.

It holds no arena's kernel state: each tick stacks the owners' states in and writes each new
one back (stack in, split out). One tick, :meth:`LockstepBatch.tick`, is the path written in
docs/semantics/live/arena.md "The tick path": stack in, kernel ``decide_phase`` (one jitted call),
each pact table adopted once, every external player asked at once (``asyncio.gather``), their
validated tool actions dispatched in player order (:func:`~bdpd_jax.host.live.dispatch.dispatch_tool`),
kernel ``step_phase`` (one jitted call), split out, one turn record per arena (with its
discussion), appended to ``turns.jsonl`` and returned.

The waits (agents, speakers) are awaited on the caller's event loop; the kernel work between
them goes through the tick's ``offload`` (:mod:`~bdpd_jax.host.live.sync_loop`: inline by default, a
worker thread in the server), so one event loop serves every tick of a process.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from bdpd_jax.host.agents.base import AgentResult, fallback_harvest
from bdpd_jax.host.live.arena_run import unbatch
from bdpd_jax.host.live.dispatch import dispatch_tool
from bdpd_jax.host.live.envelope import envelopes
from bdpd_jax.host.live.governance_agent import govern
from bdpd_jax.host.live.govsim_talk import after_harvest
from bdpd_jax.host.live.interrupt import INTERRUPTED
from bdpd_jax.host.live.programs import has_governance, programs
from bdpd_jax.host.live.records import record_rows, turn_record
from bdpd_jax.host.live.sync_loop import Offload, each, inline
from bdpd_jax.host.player_kinds import PlayerKind
from bdpd_jax.kernels.plugins import NAME
from bdpd_jax.kernels.state import still_playing
from bdpd_jax.kernels.sustainability import acting

if TYPE_CHECKING:
    from bdpd_jax.host.live.arena_run import ArenaRun


T = TypeVar("T")


def _stack(trees: list):
    return jax.tree_util.tree_map(lambda *xs: np.stack(xs, axis=-1), *trees)


class LockstepBatch:
    """Arenas of one Game advanced in lockstep: one batched kernel call per phase per turn.
    ``runs``: the started arenas' run states (each at its own turn); ``width`` (>= the runs)
    pads the batch with copies of the last arena, played and ignored. It holds the members'
    keys and params (fixed for an arena's life) and the compiled programs, never their
    states: each tick stacks the owners' states in and writes the new ones back."""

    def __init__(self, runs: list[ArenaRun], width: int | None = None) -> None:
        width = len(runs) if width is None else width
        if not runs or isinstance(width, bool) or not isinstance(width, int) or width < len(runs):
            raise ValueError(f"width: must be an integer >= {len(runs)} (the arenas, at least one), got {width!r}")
        game = runs[0].game
        for k, r in enumerate(runs):
            if r.game != game:
                raise ValueError(
                    f"arenas[{k}]: its game (players, strategies, engine, layers) differs from "
                    "arenas[0]'s; a batch runs one compiled program"
                )
        self.runs = list(runs)
        self.width = width
        self.game = game
        self.gov = has_governance(game)
        _, self._decide, self._step = programs(game)
        padded = self._padded(self.runs)
        self.keys = jnp.stack([r.key for r in padded], axis=-1)
        self.params = jax.tree_util.tree_map(
            lambda *xs: jnp.stack([jnp.asarray(x) for x in xs], axis=-1), *[r.params for r in padded]
        )
        # stock units per harvest unit, per arena: an agent's fallback harvest (0.2 x capacity,
        # agents/base.py) is in the heuristics' units and is scaled as the built-ins' is
        self.units = np.asarray([r.units for r in self.runs], np.float64)
        # per arena, the players asked from outside (specs are fixed once an arena starts)
        self._external = [[i for i, s in enumerate(r.specs) if s.external] for r in self.runs]
        self._active_from = np.asarray(self.params.players.active_from)  # int32[N, B]: asked from that turn on
        #: whether a tick can wait on anyone (a code, HTTP or LLM player, an HTTP or LLM
        #: governance agent); if not, it runs without an event loop (``sync_loop.drive``)
        self.waits = any(r.waits for r in self.runs)

    def _padded(self, items: list) -> list:
        return items + items[-1:] * (self.width - len(items))

    def stacked_state(self):
        """The members' states stacked on a trailing batch axis (padded to ``width``)."""
        flat = self._padded([r.kernel_leaves for r in self.runs])  # (no flatten per arena)
        return self.runs[0].kernel_tree.unflatten([np.moveaxis(np.array(xs), 0, -1) for xs in zip(*flat, strict=True)])

    def _write_back(self, state) -> None:
        """Each member's new state, split out of the batch state, written into its owner."""
        leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(state)]
        for b, r in enumerate(self.runs):
            if not r.done:  # an arena stopped by the host (its tokenBudget) keeps its last state
                r.set_leaves([x[..., b] for x in leaves])

    async def tick(self, offload: Offload = inline) -> None:
        """One turn of every arena still playing. Awaited here: the governance agents, the
        players, the speakers; the kernel work between them goes through ``offload`` (3 calls
        a tick, 4 with a governance agent). Written as one method so that a route's tick
        reaches the kernel in <= 10 calls (counted by tests/host/test_tick_path.py)."""
        runs = self.runs
        if all(r.done for r in runs):
            return
        for r in runs:
            r.set_in_tick(True)
        try:
            state = None
            if any(r.governor is not None for r in runs):  # the owners' governance agents act first
                state = await govern(await offload(self.stacked_state), runs, offload)
            sb, begun, ahead, seen = await offload(self._decided, state)
            by_arena, overridden = await self._ask(*seen)
            lines = await offload(self._played, sb, begun, ahead, by_arena, overridden)
            talks = [after_harvest(r, line, end, timed=self.waits) for r, line, end in lines]
            await each(talks, self.waits)  # arenas talk at once
            await offload(self._keep, lines)
        finally:
            for r in runs:
                r.set_in_tick(False)
                if r.registry is not None:
                    r.registry.release()

    def _decided(self, state):
        """Stack in (unless ``state`` is given), the decide phase, and what asking the players
        reads converted to numpy: (begun state, begin records, ahead, (observations, wealth,
        strategy, pools, the pact table after the scripted talk))."""
        if state is None:
            state = self.stacked_state()
        sb, begun, obs, pacts_d, ahead = self._decide(self.keys, state, self.params)
        asking = any(self._external)  # observations are read only for players asked from outside
        seen = (
            jax.tree_util.tree_map(np.asarray, obs) if asking else {},
            np.asarray(sb.wealth) if asking else None,
            np.asarray(sb.strategy) if asking else None,
            self._pools(sb) if asking else None,
            jax.tree_util.tree_map(np.asarray, pacts_d) if self.gov else None,
        )
        return sb, begun, ahead, seen

    def _played(self, sb, begun, ahead, by_arena, overridden) -> list[tuple[ArenaRun, dict, bool]]:
        """The answers' tool actions, the step phase, split out; each arena's turn record
        (``_records``)."""
        ext, ext_req, ext_ann, tools = self._act(by_arena, sb.wealth.shape)
        pacts = None
        if self.gov:  # the tick's tables, after the tool writes (padding repeats the last)
            pacts = _stack(self._padded([r.registry.table for r in self.runs if r.registry is not None]))
        sb = with_sanction_intents(sb, self.runs)
        dt = np.dtype(sb.wealth.dtype)  # numpy arguments: no eager jax op per array (same rounding)
        state, rec = self._step(
            self.keys, sb, begun, ext, ext_req.astype(dt), ext_ann.astype(dt), pacts, ahead, self.params
        )
        ended = ~np.asarray(still_playing(state, self.params))  # the kernel's rule, per arena
        self._write_back(state)  # split out: every owner holds its new state (pacts included)
        for r in self.runs:
            if r.registry is not None:
                r.registry.release()
        return self._records(rec, ended, by_arena, tools, overridden)

    async def _ask(
        self, obs_np: dict, wealth: np.ndarray | None, strategy: np.ndarray | None, pool: np.ndarray | None, pk_d
    ) -> tuple[list[dict[int, AgentResult]], list[set]]:
        """Every external player of every arena still playing, asked at once: (per arena,
        player -> answer; per arena, the external players a builtin decides for this turn).
        Each registry adopts its arena's table of ``pk_d`` (the tick's one sync)."""
        runs = self.runs
        jobs, where = [], []
        overridden: list[set] = [set() for _ in runs]
        for b, r in enumerate(runs):
            if r.done:
                continue
            r.new_turn()
            if r.registry is not None:
                r.registry.sync(unbatch(pk_d, b))
            if not self._external[b]:  # no player of this arena is asked from outside
                continue
            if strategy is None or wealth is None:  # read whenever any arena has external players
                raise ValueError("strategy: external players to ask, but the observations were not read")
            asked = []
            for i in self._external[b]:
                if not acting(self._active_from[i, b], r.turn + 1):  # not yet in the game: not asked
                    continue
                if strategy[i, b] != r.external_index:  # strategy_override: a builtin decides
                    overridden[b].add(i)
                    continue
                asked.append(i)
            if not asked:
                continue
            envs = envelopes(
                r, [r.specs[i].player_id for i in asked], {k: v[..., b] for k, v in obs_np.items()}, r.turn + 1
            )
            for i in asked:
                s = r.specs[i]
                job = ask_agent(
                    r.agents[i],
                    envs[s.player_id],
                    float(wealth[i, b]),
                    s.player_kind,
                    pool=None if pool is None else float(pool[b]),
                )
                if self.waits:  # the owner's close or delete ends the wait (host/live/interrupt.py)
                    job = r.interrupt.race(job, partial(_interrupted, float(wealth[i, b])))
                jobs.append(job)
                where.append((b, i))
        results = await each(jobs, self.waits)
        by_arena: list[dict[int, AgentResult]] = [{} for _ in runs]
        for (b, i), res in zip(where, results, strict=True):
            if res.fallback and not res.stock_units and self.units[b] != 1.0:
                res = dataclasses.replace(res, harvest=res.harvest * float(self.units[b]))
            by_arena[b][i] = res
        return by_arena, overridden

    def _pools(self, sb) -> np.ndarray | None:
        """float[B]: each arena's stock before the harvest, the cap of a whole-unit answer
        (None when no arena's model asks for whole units)."""
        if not any(getattr(r.config.model, "whole_units", False) for r in self.runs):
            return None
        return np.asarray(jax.vmap(self.game.engine.stock, in_axes=-1)(sb.engine), np.float64)

    def _act(self, by_arena: list[dict[int, AgentResult]], shape: tuple[int, int]):
        """The answers' tool actions dispatched in player order on the table after the
        builtins' scripted talk; (ext bool[N, B], ext_req f64[N, B], ext_ann f64[N, B] (NaN:
        none), per arena the tool log)."""
        ext = np.zeros(shape, bool)
        ext_req = np.zeros(shape, np.float64)
        ext_ann = np.full(shape, np.nan)
        tools: list[list] = [[] for _ in self.runs]
        for b, r in enumerate(self.runs):
            if r.done:
                continue
            t = r.turn + 1
            for i in sorted(by_arena[b]):
                res = by_arena[b][i]
                name = r.specs[i].player_id
                ext[i, b] = True
                ext_req[i, b] = res.harvest
                for act in res.actions:
                    out = dispatch_tool(r, name, act, t, validated=True)  # the agent validated it
                    tools[b].append({"playerId": name, "action": act, "result": out})
                if name in r.announced:
                    ext_ann[i, b] = r.announced[name]
        return ext, ext_req, ext_ann, tools

    def _records(
        self,
        rec,
        ended: np.ndarray,
        by_arena: list[dict[int, AgentResult]],
        tools: list[list],
        overridden: list[set],
    ) -> list[tuple[ArenaRun, dict, bool]]:
        """Each arena's turn record (its discussion comes next, then ``_keep``), and whether its
        game ended with it; the game ends where the kernel played no turn."""
        rows = record_rows(jax.tree_util.tree_map(np.asarray, rec))  # converted once for all arenas
        lines = []
        for b, r in enumerate(self.runs):
            if r.done:
                continue
            row = rows[b]
            if not row.played:
                r.finish()
                continue
            lines.append((r, turn_record(r, row.turn, row, by_arena[b], tools[b], overridden[b]), bool(ended[b])))
        return lines

    @staticmethod
    def _keep(lines: list[tuple[ArenaRun, dict, bool]]) -> None:
        """Each record kept by its arena and appended to its turns.jsonl."""
        for r, line, end in lines:
            r.end_turn(line, end)


def _interrupted(wealth: float) -> AgentResult:
    """The answer of a player whose call the owner's close or delete cut short: the fallback."""
    return AgentResult(fallback_harvest(wealth), INTERRUPTED, [], 0.0, True)


def with_sanction_intents(sb, runs: list[ArenaRun]):
    """The live players' ``sanction(target)`` calls of this turn written into the plugins'
    ``intent`` memory (bool[N, N, B]) of the batch state; consumed by the step."""
    intents = [r.take_sanction_intents() for r in runs]
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


async def ask_agent(
    agent, env: dict[str, Any], wealth: float, kind: PlayerKind, pool: float | None = None
) -> AgentResult:
    """One external decision, asked as its ``kind`` asks; an agent that raises still yields the
    fallback harvest. ``pool``: the stock before the harvest, when the model's requests are whole units."""
    try:
        return await kind.ask(agent, env, wealth, pool)
    except Exception as exc:  # noqa: BLE001 - a broken agent must never stall the turn
        return AgentResult(fallback_harvest(wealth), f"agent: {type(exc).__name__}: {exc}", [], 0.0, True)


__all__ = ["LockstepBatch", "ask_agent", "with_sanction_intents"]
