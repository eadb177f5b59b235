"""A live arena's post-game report (``summary.json``): outcome, victory evaluation and
rankings (:mod:`bdpd_jax.results.victory`), players ranked by final wealth, pacts and counts."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from bdpd_jax.host.live.registry import num
from bdpd_jax.kernels.game import Game
from bdpd_jax.kernels.outcomes import outcomes
from bdpd_jax.kernels.sustainability import f0 as f0_of
from bdpd_jax.results import schema
from bdpd_jax.results.victory import report

if TYPE_CHECKING:
    from bdpd_jax.host.live.arena_run import ArenaRun


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


__all__ = ["govsim_report", "summary"]
