"""The columns of every record layer, declared once: name, dtype, unit, meaning, wire alias.

A layer is a tuple of :class:`Column`. The frames (``Results.turns``, ``players``,
``violations``, ``sanctions``, ``perturbations``, ``governance_actions``, ``summary`` and its
GovSim columns) take their column names and order from here, and a live arena's turn record
(bdpd_jax/host/live/records.py, ``turns.jsonl`` and the HTTP API) takes its keys from the same
columns' ``wire`` aliases. ``name`` is snake_case (Python, frames, parquet); ``wire`` is the
camelCase key of the live JSON (None: the column is not on the wire, e.g. ``arena``, which a
live record carries once as ``arenaId``). A ``ref`` column is an index in a frame, an id on the
wire (:func:`wire_rows`: the event rows results/decode.py decodes, in their wire form). The
docs' column tables are generated from here (:func:`markdown_table`; tests/test_schema.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Column:
    """One column of a record layer."""

    name: str  # snake_case: the frame's column
    dtype: str  # the frame's dtype: a numpy dtype name, "str" (pandas' string dtype) or "Int64" (nullable)
    unit: str  # "" when dimensionless, a count or a label
    meaning: str
    wire: str | None = None  # the live JSON key (camelCase); None: not on the wire
    frame: bool = True  # False: a live-only column (on the wire, not in the batch frame)
    ref: str | None = None  # "player" | "pact": an index (slot) in a frame, an id on the wire (-1: null)


def _c(name: str, dtype: str, unit: str, meaning: str, wire: str | None = None, ref: str | None = None) -> Column:
    return Column(name, dtype, unit, meaning, wire, ref=ref)


def _live(name: str, dtype: str, unit: str, meaning: str, wire: str) -> Column:
    """A column only a live arena's record has (an agent's call, a violation's detail)."""
    return Column(name, dtype, unit, meaning, wire, frame=False)


ARENA = _c("arena", "int64", "", "global arena index (seed, arena_offset + i)")
TURN = _c("turn", "int32", "turn", "1-based number of the turn", "turn")

# one row per (arena, turn) played; then the engine's observables and the layers' turn columns
TURNS: tuple[Column, ...] = (
    ARENA,
    TURN,
    _c("stock", "float32", "stock units", "commons stock at the end of the turn", "stock"),
    _c("regen", "float32", "stock units", "change of the stock by the dynamics this turn", "regen"),
    _c("reserve_drawn", "float32", "stock units", "units drawn from the hidden reserve this turn", "reserveDrawn"),
    _c("collapsed", "bool", "", "the commons collapsed at the end of this turn", "collapsed"),
)

# the five governance metrics of a turn (kernels/metrics.py): columns of Results.turns, and
# the live record's ``metrics`` object (keys as named here)
METRICS: tuple[Column, ...] = (
    _c(
        "cooperation_index",
        "float32",
        "fraction",
        "share of players whose harvest was at most regen / N + eps; "
        "NaN where that share is undefined (a collapse turn, Seneca)",
        "cooperation_index",
    ),
    _c(
        "lie_score",
        "float32",
        "stock units",
        "mean |announced - actual| of the players who announced; NaN when none did",
        "lie_score",
    ),
    _c("announce_frequency", "float32", "fraction", "share of players who announced", "announce_frequency"),
    _c(
        "silent_defection",
        "float32",
        "fraction",
        "share of players over the share who had not announced; NaN where the share is undefined",
        "silent_defection",
    ),
    _c("sanction_rate", "float32", "per player", "sanctions fired this turn / N", "sanction_rate"),
)

# one row per (arena, turn, player); live: one ``decisions`` entry per player
PLAYERS: tuple[Column, ...] = (
    ARENA,
    TURN,
    _c(
        "player",
        "int32",
        "",
        "the player (frame: index in the config's list; wire: the player's id)",
        "playerId",
        "player",
    ),
    _c("strategy", "str", "", "decision function in force this turn"),
    _c("requested", "float32", "stock units", "request as submitted (after sanitising)", "requested"),
    _c("actual", "float32", "stock units", "what the player received", "actual"),
    _c("wealth", "float32", "stock units", "privateResource at the end of the turn", "wealth"),
    _c("announced", "float32", "stock units", "announced intended harvest; NaN (wire: null) when none", "announced"),
    _c("sanction", "float32", "stock units", "sanctions deducted from the player this turn", "sanction"),
    _c("invalid", "bool", "", "the request was NaN, infinite or negative and was treated as 0", "invalid"),
    _live("agent_type", "str", "", "builtin | code | http | llm | ...: what decided", "agentType"),
    _live("harvest", "float64", "stock units", "an external agent's answer (before the kernel's checks)", "harvest"),
    _live("fallback", "bool", "", "the agent failed or timed out and the fallback decided", "fallback"),
    _live("error", "str", "", "the agent's error, null when none", "error"),
    _live("elapsed_ms", "float64", "ms", "the agent call's wall time", "elapsedMs"),
    _live("actions", "object", "", "the tool actions the agent took this turn", "actions"),
    _live("overridden", "bool", "", "an owner's strategy override decided instead of the agent", "overridden"),
    _live("answer", "object", "", "a text answer: {format, raw, parsed, parseFailed} (live/agents.md §15)", "answer"),
    _live("told", "object", "", "a govsim LLM's exchanges: what it was told and answered (live/agents.md §15)", "told"),
)


def _event(player_wire: str, player: str, pact: str, term_type: str, ordinal: str) -> tuple[Column, ...]:
    """The violation event's columns (player, pact, term_type, ordinal), shared by the
    violations and the sanctions they fire; the player and pact are refs (index or slot in a
    frame, id on the wire)."""
    return (
        _c("player", "int32", "", player, player_wire, "player"),
        _c("pact", "int32", "", pact, "pactId", "pact"),
        _c("term_type", "str", "", term_type, "termType"),
        _c("ordinal", "int32", "count", ordinal, "ordinal"),
    )


# one row per pact violation event {partyId, pactId, termType} (001_*)
VIOLATIONS: tuple[Column, ...] = (
    ARENA,
    TURN,
    *_event(
        "partyId",
        "the violating party (frame: index; wire: id)",
        "the pact (frame: slot; wire: pact id)",
        "the pact's term type (kernels.pacts.register_term)",
        "the event's number among the player's violations of that term type",
    ),
    _live("detail", "str", "", "the 001_* detail string (what was harvested against which limit)", "detail"),
    _live("sanction_fired", "bool", "", "a sanction was charged to the party this turn", "sanctionFired"),
)

# one row per sanction fired, with its provenance
SANCTIONS: tuple[Column, ...] = (
    ARENA,
    TURN,
    _c("id", "str", "", "the sanction spec's or plugin's id", "specId"),
    _c("type", "str", "", "the spec's or plugin's type", "type"),
    *_event(
        "playerId",
        "the player charged (frame: index; wire: id)",
        "the violated pact (frame: slot, -1 for a plugin; wire: pact id, null)",
        "the violated pact's term type (None for a plugin)",
        "the violation event's ordinal (0 for a plugin)",
    ),
    _c("amount", "float64", "stock units", "deducted from the player", "amount"),
    _c("reason", "str", "", "the spec's reason or the plugin's reason name", "reason"),
    _c(
        "payer",
        "int32",
        "",
        "who paid a cost to impose it (frame: index, -1 for an automatic spec; wire: id, null)",
        "paidBy",
        "player",
    ),
    _c("cost", "float64", "stock units", "what imposing it cost the payer (0 for an automatic spec)", "cost"),
)

# one row per perturbation firing (Table A.1 specs)
PERTURBATIONS: tuple[Column, ...] = (
    ARENA,
    TURN,
    _c("id", "str", "", "the perturbation spec's id", "id"),
    _c("type", "str", "", "the perturbation type", "type"),
    _c(
        "target",
        "str",
        "",
        "what was acted on: regen_rate, capacity, threshold, stock, wealth[i|*], strategy[i|*], visible[<variable>]",
        "target",
    ),
    _c(
        "value",
        "float64",
        "",
        "the acted-on quantity after the firing (strategy override: the new strategy's index)",
        "value",
    ),
    _c("strategy", "str", "", "a strategy override's new strategy (None otherwise)"),
)

# one row per action a governance agent applied (kernels/governance_agent.py)
GOVERNANCE_ACTIONS: tuple[Column, ...] = (
    ARENA,
    TURN,
    _c("id", "str", "", "the governance plugin's id"),
    _c("type", "str", "", "the plugin's type"),
    _c("action", "str", "", "cap | ladder_scale | regen"),
    _c("value", "float64", "", "the cap (inf: lifted), the factor on every sanction amount, or the regen value"),
)

# GovSim's outcomes per arena, exactly (Piatti et al. 2024 §2.4; kernels/outcomes.py):
# m = turns played, R_i = player i's total catch, f(0) the engine's sustainability threshold at the start
GOVSIM: tuple[Column, ...] = (
    _c(
        "govsim_survival_time",
        "int32",
        "turns",
        "m: the collapse turn; without a collapse min(H, m), H = model.survivalHorizon (GovSim's analysis: 12), "
        "else the run's length",
    ),
    _c("govsim_survived", "bool", "", "no collapse before turn H (H as above, else T): GovSim's survival rate"),
    _c("govsim_total_gain", "float64", "stock units", "sum_i R_i (catches, never a change of wealth)"),
    _c(
        "govsim_gain",
        "float64",
        "stock units",
        "mean of R_i over the players present (activeFrom <= m; model.metricPlayers) (the paper's Gain)",
    ),
    _c("govsim_efficiency", "float64", "fraction", "min(1, sum_i R_i / (T f(0))); NaN where f(0) is undefined"),
    _c("govsim_equality", "float64", "fraction", "1 - Gini(R) over the players present; NaN when every R_i is 0"),
    _c(
        "govsim_over_usage",
        "float64",
        "fraction",
        "(player, turn) catches above f(stock before)/N, collapse turn "
        "included, over the player-turns acted (N m); NaN where the engine defines no threshold",
    ),
)

# the project's own outcomes per arena (kernels/outcomes.py): after GOVSIM in the summary
PROJECT: tuple[Column, ...] = (
    _c("survival_time", "int32", "turns", "turns played"),
    _c("total_gain", "float64", "stock units", "sum over players and turns of actual harvests"),
    _c(
        "efficiency",
        "float64",
        "fraction",
        "min(1, total_gain / (maxTurns x the engine's maximum sustainable yield)); NaN without a closed form",
    ),
    _c("equality", "float64", "fraction", "1 - Gini of per-player gains (1 when nobody harvested)"),
    _c(
        "ex_post_over_usage",
        "float64",
        "fraction",
        "share of (player, turn) catches over regen / N, regen measured "
        "after the harvest, over the turns where that share is defined; NaN when no turn had one",
    ),
)

# one row per arena; ``{i}`` columns repeat per player; then the engine's summary values, GOVSIM and PROJECT
SUMMARY: tuple[Column, ...] = (
    ARENA,
    _c("survived", "bool", "", "the commons is alive after the run"),
    _c("collapse_turn", "Int64", "turn", "the turn it collapsed (<NA> when it survived)"),
    _c("turns_played", "int32", "turns", "turns played"),
    _c("wealth_{i}", "float32", "stock units", "player i's privateResource at the end"),
    _c("rank_{i}", "int32", "", "player i's wealth rank (1 = richest; ties share the better rank)"),
    _c("strategy_{i}", "str", "", "player i's strategy label"),
)

#: the name of GovSim's outcome table: its layer here and its block in a live arena's report
GOVSIM_LAYER = "govsim"

LAYERS: dict[str, tuple[Column, ...]] = {
    "turns": TURNS,
    "metrics": METRICS,
    "players": PLAYERS,
    "violations": VIOLATIONS,
    "sanctions": SANCTIONS,
    "perturbations": PERTURBATIONS,
    "governance_actions": GOVERNANCE_ACTIONS,
    "summary": SUMMARY,
    GOVSIM_LAYER: GOVSIM,
    "project": PROJECT,
}


def names(layer: tuple[Column, ...]) -> tuple[str, ...]:
    """The layer's frame column names, in order (its live-only columns left out)."""
    return tuple(c.name for c in layer if c.frame)


def wire(layer: tuple[Column, ...]) -> dict[str, str]:
    """name -> wire key of the layer's columns that are on the wire."""
    return {c.name: c.wire for c in layer if c.wire is not None}


def wire_row(layer: tuple[Column, ...], **values: Any) -> dict[str, Any]:
    """A live JSON row of ``layer`` from values by column name, keyed by wire alias in the
    layer's order (a value the layer does not put on the wire is an error: one spelling)."""
    keys = wire(layer)
    unknown = set(values) - set(keys)
    if unknown:
        raise ValueError(f"wire_row: {sorted(unknown)} are not wire columns of this layer")
    return {keys[n]: values[n] for n in keys if n in values}


def _wire_column(c: Column, v: Any, ids: Mapping[str, Callable[[int], Any]], number: Callable[[Any], list]) -> list:
    """A decoded column's values in their wire form: a ref's index through ``ids[c.ref]``
    (-1: null), floats through ``number`` (the kernel floats' JSON form, a whole column at
    once), ints and bools as Python's, other values (labels, None) as they are."""
    if c.ref is not None:
        to_id = ids[c.ref]
        return [None if i < 0 else to_id(i) for i in np.asarray(v).tolist()]
    kind = np.dtype(c.dtype).kind if c.dtype not in ("str", "object", "Int64") else "O"
    if kind == "f":
        return list(number(np.asarray(v)))
    return np.asarray(v).tolist() if kind in "iub" else list(v)


def wire_rows(
    layer: tuple[Column, ...],
    cols: Mapping[str, Any],
    ids: Mapping[str, Callable[[int], Any]],
    number: Callable[[Any], list],
    omit: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """Live JSON rows of ``layer`` from decoded columns (results/decode.py: index form, one
    entry per row; a scalar is every row's value), keyed by wire alias in the layer's order,
    each value in its wire form (:func:`_wire_column`). Columns in ``omit`` or not on the
    wire are left out."""
    n = next((len(v) for v in cols.values() if not _scalar(v)), 0)
    if n == 0:
        return []
    on = [c for c in layer if c.wire is not None and c.name in cols and c.name not in omit]
    values = [[cols[c.name]] * n if _scalar(cols[c.name]) else _wire_column(c, cols[c.name], ids, number) for c in on]
    keys = [str(c.wire) for c in on]
    return [dict(zip(keys, row, strict=True)) for row in zip(*values, strict=True)]


def _scalar(v: Any) -> bool:
    """A decoded column given as one value for every row (a plugin's id, no term type)."""
    return v is None or isinstance(v, str | int | float | bool)


def _empty(dtype: str) -> pd.Series:
    if dtype == "str":
        return pd.Series([], dtype=object)
    return pd.Series([], dtype=dtype)


def empty_frame(layer: tuple[Column, ...]) -> pd.DataFrame:
    """A frame of the layer with no rows (each column of its declared dtype; strings as object)."""
    return pd.DataFrame({c.name: _empty(c.dtype) for c in layer if c.frame})


def frame(layer: tuple[Column, ...], cols: dict[str, Any]) -> pd.DataFrame:
    """A frame of exactly the layer's frame columns, in its order, from columns by name."""
    missing = [n for n in names(layer) if n not in cols]
    if missing:
        raise ValueError(f"frame: columns {missing} missing")
    return pd.DataFrame({c.name: _cast(cols[c.name], c.dtype) for c in layer if c.frame})


def _cast(v: Any, dtype: str) -> Any:
    """A decoded numeric array in the column's declared dtype (strings and scalars as given)."""
    if isinstance(v, np.ndarray) and dtype not in ("str", "object", "Int64") and v.dtype != dtype:
        return v.astype(dtype)
    return v


def markdown_table(layer: tuple[Column, ...]) -> str:
    """The layer's column table for the docs (generated; tests/test_schema.py)."""
    rows = ["| column | dtype | unit | wire | meaning |", "|---|---|---|---|---|"]
    for c in layer:
        name = f"`{c.name}`" if c.frame else f"(live) `{c.name}`"
        rows.append(f"| {name} | {c.dtype} | {c.unit or '-'} | {f'`{c.wire}`' if c.wire else '-'} | {c.meaning} |")
    return "\n".join(rows)


__all__ = [
    "Column",
    "LAYERS",
    "TURNS",
    "METRICS",
    "PLAYERS",
    "VIOLATIONS",
    "SANCTIONS",
    "PERTURBATIONS",
    "GOVERNANCE_ACTIONS",
    "GOVSIM",
    "PROJECT",
    "SUMMARY",
    "names",
    "wire",
    "wire_row",
    "wire_rows",
    "empty_frame",
    "frame",
    "markdown_table",
]
