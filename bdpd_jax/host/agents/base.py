"""Shared agent pieces: the result record, the spec's fallback harvest (defined once here), an
utterance and the signal that cuts a discussion short.

Spec (004 §A.3.2/§A.3.3): on timeout, error or an invalid answer the arena applies
``0.2 * capacity(w)`` with ``capacity(w) = 1 + 0.05 * w`` and records the error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import orjson

from bdpd_jax.config.limits import to_float
from bdpd_jax.kernels.observe import capacity as _kernel_capacity

FALLBACK_FRACTION: float = 0.2
MAX_ERROR_CHARS: int = 2000  # an agent's error text as recorded (turns.jsonl, summaries)


def truncate_error(value: Any) -> str | None:
    """An error as recorded: text of at most ``MAX_ERROR_CHARS``, saying how long it was
    (idempotent). Any other value (a scripted player's list, object, nested value) is bounded
    by its serialized size, not its ``len()``: it becomes its JSON text, then is cut the same way."""
    if value is None:
        return None
    text = value if isinstance(value, str) else _serialized(value)
    if len(text) <= MAX_ERROR_CHARS:
        return text
    note = f"... [{len(text)} chars]"
    return text[: MAX_ERROR_CHARS - len(note)] + note


def _serialized(value: Any) -> str:
    """``value`` as compact JSON text; a value JSON cannot hold (too deep, a lone surrogate, an
    unknown type) as its type name, so recording an error never raises."""
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return f"<unserializable {type(value).__name__}>"


def capacity(wealth: float) -> float:
    """Wealth-scaled capacity ``1 + 0.05 * w`` (Table A.3): the kernels' rule, on a float."""
    return float(_kernel_capacity(check_wealth(wealth)))


def fallback_harvest(wealth: float) -> float:
    """Fallback harvest ``0.2 * capacity(w)`` applied when an agent fails."""
    return FALLBACK_FRACTION * capacity(wealth)


def check_wealth(wealth: float) -> float:
    """Validate the wealth passed by the arena (finite real number); return it as float."""
    if isinstance(wealth, bool) or not isinstance(wealth, (int, float)):
        try:
            wealth = float(wealth)  # numpy / jax scalars
        except (TypeError, ValueError):
            raise ValueError(f"wealth: must be a finite number, got {wealth!r}") from None
    w = float(wealth)
    if not math.isfinite(w):
        raise ValueError(f"wealth: must be a finite number, got {wealth!r}")
    return w


def valid_harvest(value: Any) -> float | None:
    """Return ``value`` as float if it is a finite real number >= 0, else None (a JSON
    integer too large for a float, e.g. 10**400, is None too: the fallback, flagged)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        v = to_float(value, "harvest")
    except ValueError:
        return None
    if not math.isfinite(v) or v < 0:
        return None
    return v


def join_errors(errors: list[str]) -> str | None:
    """Collapse a list of error strings into the single ``error`` field (None if empty)."""
    return "; ".join(errors) if errors else None


@dataclass
class AgentResult:
    """One agent decision: the harvest to apply, tool actions, and what went wrong (if anything).

    ``error`` is None on a clean call; ``fallback`` is True when ``harvest`` is the fallback.
    A non-None error with ``fallback=False`` means the harvest is good but something else was
    dropped (e.g. a malformed tool call).
    """

    harvest: float
    error: str | None = None  # any value given is recorded as bounded text (truncate_error)
    actions: list[dict[str, Any]] = field(default_factory=list)
    elapsed_ms: float = 0.0
    fallback: bool = False
    stock_units: bool = False  # a fallback already in stock units (a player's fixed fallbackHarvest): not rescaled
    #: what the decision's record adds (``answer``: a text answer's raw text and parsed value;
    #: ``told``: what the model was told, under the govsim architecture); replay returns it
    record: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.error = truncate_error(self.error)


@dataclass
class Utterance:
    """One answer in the discussion phase (docs/semantics/live/agents.md §14): ``text`` (None: the
    player said nothing usable), the player it names to speak next (None: none), what went wrong."""

    text: str | None
    next_speaker: str | None = None
    error: str | None = None
    end: bool = False  # the speaker ends the conversation (govsim protocol; docs/semantics/live/agents.md §15)
    record: dict[str, Any] | None = None  # what the utterance's record adds (``told``, ``raw``)

    def __post_init__(self) -> None:
        self.error = truncate_error(self.error)


#: why a discussion ended before its rounds (the record's ``discussion.cut``)
CUT_REASONS: tuple[str, ...] = ("deadline", "interrupted")


class ConversationCut(Exception):  # noqa: N818 - a signal, not an error
    """The signal that the discussion ends here (``reason``: one of ``CUT_REASONS``): its
    deadline passed, the owner interrupted it (host/live/interrupt.py), or a replayed speaker
    says the logged one ended here."""

    def __init__(self, reason: str) -> None:
        if reason not in CUT_REASONS:
            raise ValueError(f"reason: one of {CUT_REASONS}, got {reason!r}")
        super().__init__(reason)
        self.reason = reason
