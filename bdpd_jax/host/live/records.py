"""What a live arena writes of its game: a turn record (a line of ``turns.jsonl``, 004_* A.1)
each turn and the post-game report (``summary.json``) at the end.

:func:`turn_record` builds the record of one turn from the arena's run state
(:class:`~bdpd_jax.host.live.arena_run.ArenaRun`): the decisions (with the external agents'
calls), the turn's messages, tool results, pacts, violations, sanctions, errors, metrics and
perturbations; it adds to the run's per-player counts for ``summary.json`` (``ArenaRun.count``).
:func:`summary` builds that report: outcome, victory evaluation and rankings
(:mod:`bdpd_jax.results.victory`), players ranked by final wealth, pacts and counts.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from bdpd_jax.host.agents.base import AgentResult
from bdpd_jax.host.live.registry import num, nums
from bdpd_jax.kernels.game import Game
from bdpd_jax.kernels.governance import NAME as GOV
from bdpd_jax.kernels.outcomes import outcomes
from bdpd_jax.kernels.plugins import NAME as PLUGINS
from bdpd_jax.kernels.sustainability import f0 as f0_of
from bdpd_jax.results import decode, schema
from bdpd_jax.results.victory import report

if TYPE_CHECKING:
    from bdpd_jax.host.live.arena_run import ArenaRun

#: a live record's one arena, as the decoders index it (the wire carries it once, as ``arenaId``)
ARENA = np.zeros(1, np.int64)


def sanction_rows(run: ArenaRun, one: dict) -> list[dict[str, Any]]:
    """One row per sanction fired this turn, with its provenance: the spec's rows (``specId``,
    ``type``, ``reason``, the violation event ``playerId``, ``pactId``, ``termType``,
    ``ordinal``, the ``amount``; ``paidBy`` / ``cost``: null / 0 for the automatic specs of
    000_* 2.4), then each governance plugin's (who fined whom, at what cost): the batch's
    decoders (results/decode.py) on this arena's turn ``one`` (:func:`decode.one_turn`)."""
    specs = decode.spec_sanction_columns(one, ARENA, run.sanction_specs)  # specs listed once per run
    blocks = ([specs] if specs is not None else []) + decode.plugin_sanction_columns(one, ARENA, run.config.plugins)
    ids = _ids(run)
    return [row for cols in blocks for row in schema.wire_rows(schema.SANCTIONS, cols, ids, nums)]


def _ids(run: ArenaRun) -> dict[str, Any]:
    """A player's index -> its id, a pact's slot -> its id (the schema's refs on the wire)."""

    def pact(slot: int) -> str:
        if run.registry is None:  # turn_record reads a governance record only with the arena's registry
            raise ValueError("registry: a sanction fired in an arena without a pact registry")
        return run.registry.id_of(slot)

    return {"player": run.players.__getitem__, "pact": pact}


# the record's float columns per player and per arena (schema.PLAYERS / schema.TURNS)
_PLAYER_FLOATS = tuple(c.name for c in schema.PLAYERS if c.frame and c.dtype == "float32")
_ARENA_FLOATS = tuple(c.name for c in schema.TURNS if c.dtype == "float32")


@dataclasses.dataclass
class TurnRow:
    """One arena's values of a batched kernel turn record, as :func:`turn_record` reads them."""

    requested: list[float | None]  # [N] (None for NaN), as are the four below
    actual: list[float | None]
    announced: list[float | None]
    wealth: list[float | None]
    sanction: list[float | None]
    stock: float | None
    regen: float | None
    reserve_drawn: float | None
    invalid: list[bool]  # [N]
    turn: int
    played: bool
    collapsed: bool
    metrics: dict[str, float | None]
    engine: dict[str, float | None]  # the engine's float variables
    actual_np: np.ndarray  # f[N]
    extra: dict  # the layers' records (numpy slices)


def record_rows(rec) -> list[TurnRow]:
    """Per arena, the values :func:`turn_record` reads from a batched kernel turn record
    (numpy leaves, batch axis last), converted column by column once per tick (the values of
    :func:`~bdpd_jax.host.live.registry.num`): floats (None for NaN), bools, ints as Python
    objects, ``extra`` (the layers' records) and ``actual_np`` as numpy slices."""
    nb = np.shape(rec.turn)[-1]
    cols = {k: nums(np.asarray(getattr(rec, k)).T) for k in _PLAYER_FLOATS}  # [N, B] -> per arena [N]
    cols.update({k: nums(getattr(rec, k)) for k in _ARENA_FLOATS})
    invalid = np.asarray(rec.invalid).T.tolist()
    turn, played, collapsed = (np.asarray(x).tolist() for x in (rec.turn, rec.played, rec.collapsed))
    metrics = {k: nums(v) for k, v in rec.metrics.items()}
    actual = np.asarray(rec.actual)
    engine = {k: nums(v) for k, v in rec.engine_extra.items() if np.asarray(v).dtype.kind == "f"}
    has_extra = bool(jax.tree_util.tree_leaves(rec.extra))
    return [
        TurnRow(
            **{k: v[b] for k, v in cols.items()},
            invalid=invalid[b],
            turn=turn[b],
            played=played[b],
            collapsed=collapsed[b],
            metrics={k: v[b] for k, v in metrics.items()},
            engine={k: v[b] for k, v in engine.items()},
            actual_np=actual[:, b],
            extra=_arena_slice(rec.extra, b) if has_extra else {},
        )
        for b in range(nb)
    ]


def _arena_slice(tree: Any, b: int) -> Any:
    """Arena ``b``'s numpy slice of every leaf of a batched record tree (batch axis last)."""
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[..., b], tree)


#: decision fields an agent may add (``AgentResult.record``): a text answer's raw text and
#: parsed value, and what a govsim-architecture model was told and answered (live/agents.md §15)
AGENT_RECORD_KEYS: tuple[str, ...] = ("answer", "told")


def turn_record(
    run: ArenaRun, t: int, rec: TurnRow, calls: dict[int, AgentResult], tools: list, overridden: set
) -> dict[str, Any]:
    """The record of turn ``t`` from the arena's row of :func:`record_rows`."""
    decisions = []
    errors = []
    for i, s in enumerate(run.specs):
        d = schema.wire_row(
            schema.PLAYERS,
            player=s.name,
            agent_type=run.agent_kind(i),
            **{k: getattr(rec, k)[i] for k in (*_PLAYER_FLOATS, "invalid")},
        )
        if i in calls:
            r = calls[i]
            d.update(
                schema.wire_row(
                    schema.PLAYERS,
                    harvest=r.harvest,
                    fallback=r.fallback,
                    error=r.error,
                    elapsed_ms=round(r.elapsed_ms, 3),
                    actions=r.actions,
                )
            )
            if r.record:  # the agent's own fields (a text answer, what the model was told)
                d.update(
                    schema.wire_row(schema.PLAYERS, **{k: v for k, v in r.record.items() if k in AGENT_RECORD_KEYS})
                )
            if r.error:
                errors.append({"playerId": s.player_id, "error": r.error})
                run.count(s.player_id, "errors", 1)
            run.count(s.player_id, "fallbacks", int(r.fallback))
        elif i in overridden:
            d.update(schema.wire_row(schema.PLAYERS, overridden=True))
        run.count(s.player_id, "totalHarvest", d["actual"] or 0.0)
        decisions.append(d)
    violations, sanctions = [], []
    g = decode.layer_record(rec.extra, GOV) if rec.extra else None
    one = decode.one_turn(rec.extra, t) if rec.extra and isinstance(rec.extra, dict) else None
    if run.registry is not None and g and one is not None:
        events = decode.violation_columns(one, ARENA)
        violations = run.registry.record_violations(events, rec.actual_np, np.asarray(g["fired"]))
        for ev in violations:
            run.count(ev["partyId"], "violations", 1)
        sanctions = sanction_rows(run, one)
        for i, p in enumerate(run.players):
            run.count(p, "sanctions", float(rec.sanction[i] or 0.0))
    cols = decode.perturbation_columns(one, ARENA, run.spec_ids, []) if one is not None else None
    fired = [] if cols is None else schema.wire_rows(schema.PERTURBATIONS, cols, _ids(run), nums, omit=("turn",))
    owner = run.take_owner_fired()
    gov = {} if run.governor is None else {"governance": governance_entry(run, t, rec.extra)}
    return {
        "arenaId": run.arena_id,
        **schema.wire_row(
            schema.TURNS,
            turn=t,
            stock=rec.stock,
            regen=rec.regen,
            reserve_drawn=rec.reserve_drawn,
            collapsed=rec.collapsed,
        ),
        "decisions": decisions,
        "messages": run.bus.messages_for_turn(t),
        "tools": tools,
        "pacts": run.registry.compact() if run.registry is not None else [],
        "violations": violations,
        "sanctions": sanctions,
        "errors": errors,
        "metrics": schema.wire_row(schema.METRICS, **rec.metrics),
        "engine": dict(rec.engine),
        "perturbations": fired,
        "ownerPerturbations": owner,
        **gov,
    }


def governance_entry(run: ArenaRun, t: int, extra: dict) -> dict[str, Any]:
    """The attached governance agent's turn: what it asked and what the kernel applied (the
    plugin layer's begin record of its plugin)."""
    begin = decode.begin_record(extra, PLUGINS) or {}
    applied = begin.get("actions", ())
    gov = run.governor
    if gov is None:  # (called for arenas with one)
        return {}
    k = gov.plugin_index
    return gov.entry(t, applied[k] if k < len(applied) and applied[k] is not None else None)


# -- the post-game report ------------------------------------------------------------------------
def summary(run: ArenaRun, st, status: str) -> dict[str, Any]:
    """The report of the arena whose run state is ``run``; ``st``: its kernel state (numpy
    leaves, no batch axis); ``status``: the arena's."""
    players = run.players
    llm = run.llm
    wealth = np.asarray(st.wealth)
    order = sorted(range(len(run.specs)), key=lambda i: (-float(wealth[i]), i))
    rank = {i: r + 1 for r, i in enumerate(order)}
    survived, collapse_turn = not bool(st.collapsed), int(st.collapse_turn) or None
    victory = report(
        players=players,
        survived=survived,
        collapse_turn=collapse_turn,
        turns_played=int(st.turn),
        max_turns=run.max_turns,
        initial=[s.private_resource for s in run.specs],
        final=[num(w) or 0.0 for w in wealth],
        violations=[run.stats[p]["violations"] for p in players],
    )
    return {
        "arenaId": run.arena_id,
        "status": status,
        "turnsPlayed": int(st.turn),
        "survived": survived,
        "collapseTurn": collapse_turn,
        "victory": victory,
        "finalStock": num(run.game.engine.stock(jax.tree_util.tree_map(jnp.asarray, st.engine))),
        "players": [
            {
                "playerId": s.player_id,
                "agentType": run.agent_kind(i),
                "strategy": s.strategy if not s.external else None,
                "wealth": num(wealth[i]),
                "rank": rank[i],
                **run.stats[s.player_id],
                **({"usage": u} if (u := llm.player_usage(s.player_id) if llm else None) is not None else {}),
            }
            for i, s in enumerate(run.specs)
        ],
        schema.GOVSIM_LAYER: govsim_report(run, st),
        "pacts": run.registry.compact() if run.registry is not None else [],
        "messages": len(run.bus),
        **(llm.report(run) if llm is not None else {}),  # tokens, calls, budget, stop (issue 38)
    }


def govsim_report(run: ArenaRun, st) -> dict[str, Any]:
    """GovSim's metrics of this game so far, keyed by their column names (NaN as null): the
    batch's own outcome columns (kernels/outcomes.py, the same compiled rule as
    ``final_numbers``) on this arena's state."""
    cols = _govsim_program(run.game)(st.tally, st.turn, st.collapsed, run.params)
    return {
        c.name: (bool(v) if v.dtype == bool else int(v) if v.dtype.kind == "i" else num(float(v)))
        for c in schema.GOVSIM
        for v in [np.asarray(cols[c.name])]
    }


@functools.lru_cache(maxsize=16)
def _govsim_program(game: Game) -> Any:
    """One arena's outcome columns from its tally, turn and params (jitted once per game;
    the maximum sustainable yield unused: only GovSim's columns are reported)."""

    def run(tally: Any, turn: Any, collapsed: Any, params: Any) -> dict[str, jax.Array]:
        f0 = f0_of(game, params)
        return outcomes(tally, turn, params.max_turns, jnp.full_like(f0, jnp.nan), f0, params, collapsed)

    return jax.jit(run)


__all__ = ["TurnRow", "governance_entry", "govsim_report", "record_rows", "summary", "turn_record"]
