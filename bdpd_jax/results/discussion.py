"""The discussion phase's transcript as a frame (docs/semantics/live/agents.md §14): one row per
utterance of a live arena's turn records (``Arena.records``, or ``replay.load(dir)[1]``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

#: arena, turn, order (1 first), speaker, text (None: said nothing usable), next_speaker (who
#: speaks next, or would), named (the speaker named it), error
COLUMNS = ("arena", "turn", "order", "speaker", "text", "next_speaker", "named", "error")
_WIRE = {"next_speaker": "nextSpeaker"}


def discussion_frame(records: Iterable[dict[str, Any]], arena: int = 0) -> pd.DataFrame:
    """One row per utterance of the turn records that carry a ``discussion``, in turn and
    speaking order; ``arena``: the value of the ``arena`` column."""
    rows = [
        {c: arena if c == "arena" else u[_WIRE.get(c, c)] for c in COLUMNS}
        for rec in records
        for u in (rec.get("discussion") or {}).get("utterances", [])
    ]
    if not rows:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})
    return pd.DataFrame(rows, columns=list(COLUMNS))


__all__ = ["COLUMNS", "discussion_frame"]
