"""Free-text answers of an LLM player (issue 37 item 3; docs/semantics/live/agents.md §15).

GovSim reads a harvest from free text: the model reasons, then writes the amount after an
``Answer:`` marker, and the first whole number after it is the amount (GovSim
``persona_v3/cognition/act_prompts.py``: the generation stops at ``Answer:``, ``So, the
answer is:`` or ``**Answer**:``, then the first run of digits is read). This module states that
rule once, with what the project adds for a text that has no marker, and the text forms of
the conversation's two signals (the next speaker, the end of the conversation).
"""

from __future__ import annotations

import re
from typing import Any

ANSWER_FORMATS: tuple[str, ...] = ("tool", "text", "auto")
#: the markers after which the amount is read (GovSim's three stop strings, any case)
_MARKER = re.compile(r"(?:\*\*answer\*\*\s*:|so,?\s+the\s+answer\s+is\s*:|answer\s*:)", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")
#: an utterance that ends the conversation: its last non-empty line is exactly ``[END]``
END_MARK: str = "[END]"
#: a line naming the next speaker in a text utterance: ``Next: <name>``
_NEXT = re.compile(r"^\s*next(?:\s+speaker)?\s*:\s*(.+?)\s*$", re.IGNORECASE)
MAX_ANSWER_CHARS: int = 20000  # a text answer is read (and recorded) up to this length


def parse_amount(text: str | None) -> tuple[float | None, str | None]:
    """``(amount, None)`` read from a free-text answer, or ``(None, reason)``.

    The rule: after the last answer marker (``Answer:``, ``**Answer**:``, ``So, the answer
    is:``), the first number; without a marker, the number when the text holds exactly one
    (``"11"`` plays 11). A negative number, no number after the marker, or several numbers
    and no marker fail: the caller falls back and flags the decision.
    """
    if not isinstance(text, str) or not text.strip():
        return None, "answer: empty text"
    text = text[:MAX_ANSWER_CHARS]
    marks = list(_MARKER.finditer(text))
    if marks:
        m = _NUMBER.search(text, marks[-1].end())
        if m is None:
            return None, "answer: no number after the answer marker"
        value = float(m.group())
    else:
        found = _NUMBER.findall(text)
        if len(found) != 1:
            return None, f"answer: no answer marker and {len(found)} numbers in the text (one is read)"
        value = float(found[0])
    if value < 0:
        return None, f"answer: negative amount {value:g}"
    return value, None


def split_utterance(text: str) -> tuple[str, str | None, bool]:
    """A text-mode utterance as ``(what is said, next speaker named or None, ends)``: a last
    line ``[END]`` ends the conversation, a line ``Next: <name>`` names the next speaker;
    both lines are taken out of what is said."""
    lines = text.strip().splitlines()
    end = False
    nxt: str | None = None
    if lines and lines[-1].strip() == END_MARK:
        end = True
        lines = lines[:-1]
    kept = []
    for line in lines:
        m = _NEXT.match(line)
        if m is not None and nxt is None:
            nxt = m.group(1).strip()
            continue
        kept.append(line)
    return "\n".join(kept).strip(), nxt, end


def message_text(data: Any) -> str | None:
    """The text body of a chat completion's first choice (None when there is none)."""
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content[:MAX_ANSWER_CHARS] if isinstance(content, str) else None


def text_answer(
    data: Any, harvest: float | None, errors: list[str], answer_format: str
) -> tuple[float | None, list[str], dict[str, Any]]:
    """The harvest of a completion under ``answer_format`` ``text`` (the text rule only) or
    ``auto`` (a valid harvest tool call, else the text rule): ``(harvest or None, errors,
    the decision's ``answer`` record {format, raw, parsed, parseFailed})``. A failed parse
    adds its reason to ``errors`` (the caller then falls back)."""
    raw = message_text(data)
    if answer_format == "auto" and harvest is not None:
        return harvest, errors, {"format": "tool", "raw": raw, "parsed": harvest, "parseFailed": False}
    value, why = parse_amount(raw)
    kept = [e for e in errors if not e.startswith("harvest: no valid harvest")]
    if value is None:
        kept.append(why or "answer: unreadable")
    return value, kept, {"format": "text", "raw": raw, "parsed": value, "parseFailed": value is None}


__all__ = [
    "ANSWER_FORMATS",
    "END_MARK",
    "MAX_ANSWER_CHARS",
    "message_text",
    "parse_amount",
    "split_utterance",
    "text_answer",
]
