"""Player tool surface (spec 003): OpenAI function schemas and action validation.

Six cheap-talk/pact tools (``broadcast``, ``send_private``, ``announce_intended_harvest``,
``propose_pact``, ``accept_pact``, ``pledge``) plus the ``harvest`` action tool. An action is a
flat dict ``{"tool": name, **arguments}``; HTTP agents return such dicts directly and LLM tool
calls are converted to them. ``--no-talk`` (``no_talk=True``) removes the six talk tools and the
optional ``announced`` field of ``harvest``; ``harvest`` stays. Schemas are built when asked for
(from the term registry as it is then) and are deterministic, so they can sit in a cache-stable prompt prefix.
The per-turn caps on a player's actions are here too, with the :class:`ActionBudget` that an
arena counts its players' dispatched actions against.
"""

from __future__ import annotations

import math
from typing import Any

from bdpd_jax.config.limits import short_repr, to_float
from bdpd_jax.config.terms import parse_terms, terms_schema

MAX_ID_CHARS: int = 128  # player and pact ids named in an action
#: a message's text is cut past this, never rejected (spec 003; the MessageBus stores it so)
MAX_MESSAGE_LEN: int = 500
ELLIPSIS: str = "\u2026"

TALK_TOOLS: tuple[str, ...] = (
    "broadcast",
    "send_private",
    "announce_intended_harvest",
    "propose_pact",
    "accept_pact",
    "pledge",
)
HARVEST_TOOL: str = "harvest"
MESSAGE_TOOLS: tuple[str, ...] = ("broadcast", "send_private", "announce_intended_harvest")
#: governance tool, offered when the arena runs a ``voluntary_sanction`` plugin (not talk:
#: ``--no-talk`` keeps it)
SANCTION_TOOL: str = "sanction"
#: the discussion phase's tool, offered when the arena talks between harvests (docs/semantics/live/agents.md §14)
SPEAK_TOOL: str = "speak"
MAX_UTTERANCE_CHARS: int = 1000  # an utterance is truncated past this (as messages are past MAX_MESSAGE_LEN)

# Per player per turn (docs/semantics.md §13): the tool actions one answer may carry (extra
# entries are dropped unread) and, of those dispatched, how many may be messages.
MAX_ACTIONS_PER_TURN: int = 16
MAX_MESSAGES_PER_TURN: int = 8
#: entries read from one answer that carries its harvest among its actions (an LLM's tool calls,
#: a scripted player's turn): the talk actions and one harvest; the rest is dropped unread
MAX_ANSWER_ENTRIES: int = MAX_ACTIONS_PER_TURN + 1
MAX_PARTIES: int = 64  # names in one propose_pact


def truncate_text(text: str, limit: int = MAX_MESSAGE_LEN) -> str:
    """Cap ``text`` at ``limit`` characters, the last one being an ellipsis when cut."""
    if len(text) <= limit:
        return text
    return text[: limit - len(ELLIPSIS)] + ELLIPSIS


def function_tool(
    name: str, description: str, properties: dict[str, Any], required: list[str] | None = None
) -> dict[str, Any]:
    """One OpenAI-style function tool; every property is required unless ``required`` names fewer."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list(properties) if required is None else required,
                "additionalProperties": False,
            },
        },
    }


_TEXT = {"type": "string", "description": f"message text (longer than {MAX_MESSAGE_LEN} chars is truncated)"}


def _harvest_schema(no_talk: bool) -> dict[str, Any]:
    props: dict[str, Any] = {
        "amount": {"type": "number", "minimum": 0, "description": "units to harvest from the commons this turn"}
    }
    if not no_talk:
        props["announced"] = {
            "type": "number",
            "minimum": 0,
            "description": "optional: harvest you publicly announce you intend to take "
            "(same as announce_intended_harvest)",
        }
    return function_tool(HARVEST_TOOL, "Submit your harvest for this turn. Call exactly once.", props, ["amount"])


def _talk_schemas() -> tuple[dict[str, Any], ...]:
    """The six talk tools; ``propose_pact``'s terms from the term registry as it is now."""
    return (
        function_tool(
            "broadcast",
            "Send a text message to every other player (they read it next turn).",
            {"text": _TEXT},
            ["text"],
        ),
        function_tool(
            "send_private",
            "Send a text message to one player (they read it next turn).",
            {"target": {"type": "string", "description": "recipient player id"}, "text": _TEXT},
            ["target", "text"],
        ),
        function_tool(
            "announce_intended_harvest",
            "Announce the harvest you intend to take (numeric, public).",
            {"value": {"type": "number", "minimum": 0}},
            ["value"],
        ),
        function_tool(
            "propose_pact",
            "Propose a pact to named parties; you accept it implicitly.",
            {"parties": {"type": "array", "items": {"type": "string"}, "minItems": 1}, "terms": terms_schema()},
            ["parties", "terms"],
        ),
        function_tool("accept_pact", "Accept a pact proposed to you.", {"pactId": {"type": "string"}}, ["pactId"]),
        function_tool(
            "pledge",
            "Unilaterally cap your own harvest (self-binding pact, active at once).",
            {"maxHarvest": {"type": "number", "exclusiveMinimum": 0}},
            ["maxHarvest"],
        ),
    )


def sanction_schema() -> dict[str, Any]:
    return function_tool(
        SANCTION_TOOL,
        "Pay the sanction cost to fine a player who broke a pact or over-harvested this "
        "turn (applied at the end of the turn; no effect, and no cost, if the target did neither or "
        "you cannot pay for all the players you fine).",
        {
            "target": {"type": "string", "description": "player id"},
            "reason": {"type": "string", "description": "optional, for the log"},
        },
        ["target"],
    )


def speak_schema() -> dict[str, Any]:
    return function_tool(
        SPEAK_TOOL,
        "Say something in the discussion after a harvest (every player reads it). Only when "
        "the last message asks you to speak.",
        {
            "text": {
                "type": "string",
                "description": f"what you say (longer than {MAX_UTTERANCE_CHARS} chars is truncated)",
            },
            "nextSpeaker": {"type": "string", "description": "optional: the player id you ask to speak next"},
        },
        ["text"],
    )


def validate_speak(args: Any) -> tuple[str, str | None]:
    """``(text, next speaker or None)`` of a ``speak`` call's arguments; ValueError naming the
    field. The text is truncated to ``MAX_UTTERANCE_CHARS``; the next speaker is checked for
    shape only (whether it may speak is the discussion's rule)."""
    if not isinstance(args, dict):
        raise ValueError(f"arguments: must be an object, got {args!r:.80}")
    text = args.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text: must be a non-empty string, got {text!r:.80}")
    nxt = args.get("nextSpeaker")
    return truncate_text(text.strip(), MAX_UTTERANCE_CHARS), None if nxt is None else _str("nextSpeaker", nxt)


def tool_schemas(no_talk: bool = False, sanction: bool = False) -> list[dict[str, Any]]:
    """The schema list for one run (full surface, or harvest-only; ``sanction``: with the
    governance tool), built when called (the term registry may have grown) and
    deterministic, so it can sit in a cache-stable prefix."""
    out = [_harvest_schema(True)] if no_talk else [*_talk_schemas(), _harvest_schema(False)]
    return out + [sanction_schema()] if sanction else out


def tool_names(no_talk: bool = False) -> tuple[str, ...]:
    """Names of the tools exposed under the given talk setting."""
    return (HARVEST_TOOL,) if no_talk else TALK_TOOLS + (HARVEST_TOOL,)


# -- validation -------------------------------------------------------------------------------
def _num(field: str, value: Any, *, strict_positive: bool = False) -> float:
    """A finite number >= 0 (> 0 with ``strict_positive``); a huge int (10**400) is a
    ValueError like any other bad number (``limits.to_float``), never an OverflowError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{field}: must be a finite number, got {short_repr(value)}")
    v = to_float(value, field)
    if not math.isfinite(v):
        raise ValueError(f"{field}: must be a finite number, got {short_repr(value)}")
    if strict_positive and v <= 0:
        raise ValueError(f"{field}: must be > 0, got {short_repr(value)}")
    if v < 0:
        raise ValueError(f"{field}: must be >= 0, got {short_repr(value)}")
    return v


def _str(field: str, value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
        raise ValueError(f"{field}: must be a non-empty string of at most {MAX_ID_CHARS} chars, got {value!r:.80}")
    return value


def _terms(value: Any) -> dict[str, Any]:
    """Terms checked against the term registry (keys the type does not have are dropped)."""
    return parse_terms(value, "terms", strict=False)


def validate_action(action: Any, *, no_talk: bool = False) -> dict[str, Any]:
    """Check one ``{"tool": ..., **args}`` dict and return a normalised copy.

    Raises ValueError naming the field and the bad value. Extra keys are ignored (dropped).
    Text is truncated to ``MAX_MESSAGE_LEN`` here already (the MessageBus's rule, idempotent), so
    turn records never carry more than the bus keeps.
    """
    if not isinstance(action, dict):
        raise ValueError(f"action: must be an object, got {action!r:.80}")
    tool = action.get("tool")
    if not isinstance(tool, str):
        raise ValueError(f"tool: must be a string, got {tool!r:.80}")
    if tool == SANCTION_TOOL:  # whether the arena offers it is the arena's check
        reason = action.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise ValueError(f"reason: must be a string, got {reason!r:.80}")
        return {
            "tool": tool,
            "target": _str("target", action.get("target")),
            "reason": None if reason is None else truncate_text(reason),
        }
    if tool not in tool_names(no_talk):
        raise ValueError(f"tool: unknown or disabled tool {tool!r:.80}")
    a = action
    if tool == "broadcast":
        if not isinstance(a.get("text"), str):
            raise ValueError(f"text: must be a string, got {a.get('text')!r:.80}")
        return {"tool": tool, "text": truncate_text(a["text"])}
    if tool == "send_private":
        if not isinstance(a.get("text"), str):
            raise ValueError(f"text: must be a string, got {a.get('text')!r:.80}")
        return {"tool": tool, "target": _str("target", a.get("target")), "text": truncate_text(a["text"])}
    if tool == "announce_intended_harvest":
        return {"tool": tool, "value": _num("value", a.get("value"))}
    if tool == "propose_pact":
        parties = a.get("parties")
        if not isinstance(parties, list) or not parties or len(parties) > MAX_PARTIES:
            raise ValueError(f"parties: must be a list of 1 to {MAX_PARTIES} player ids, got {parties!r:.80}")
        return {"tool": tool, "parties": [_str("parties[]", p) for p in parties], "terms": _terms(a.get("terms"))}
    if tool == "accept_pact":
        return {"tool": tool, "pactId": _str("pactId", a.get("pactId"))}
    if tool == "pledge":
        return {"tool": tool, "maxHarvest": _num("maxHarvest", a.get("maxHarvest"), strict_positive=True)}
    out: dict[str, Any] = {"tool": tool, "amount": _num("amount", a.get("amount"))}
    if not no_talk and a.get("announced") is not None:
        out["announced"] = _num("announced", a["announced"])
    return out


def first_entries(raw: list, field: str, errors: list[str]) -> list:
    """The first ``MAX_ANSWER_ENTRIES`` of one answer's ``field`` list; how many were dropped
    unread goes to ``errors`` (a flood costs neither validation nor records)."""
    if len(raw) > MAX_ANSWER_ENTRIES:
        errors.append(f"{field}: {len(raw) - MAX_ANSWER_ENTRIES} past the first {MAX_ANSWER_ENTRIES} dropped unread")
    return raw[:MAX_ANSWER_ENTRIES]


def validate_actions(raw: Any, *, no_talk: bool = False) -> tuple[list[dict[str, Any]], list[str]]:
    """Validate a list of actions; bad entries are dropped and described in the error list."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [f"actions: must be a list, got {type(raw).__name__}"]
    good: list[dict[str, Any]] = []
    errors: list[str] = []
    if len(raw) > MAX_ACTIONS_PER_TURN:
        errors.append(
            f"actions: {len(raw) - MAX_ACTIONS_PER_TURN} past the first {MAX_ACTIONS_PER_TURN} dropped unread"
        )
        raw = raw[:MAX_ACTIONS_PER_TURN]
    for i, item in enumerate(raw):
        try:
            good.append(validate_action(item, no_talk=no_talk))
        except ValueError as exc:
            errors.append(f"actions[{i}] dropped: {exc}")
    return good, errors


class ActionBudget:
    """Tool actions dispatched per player in the current turn, against the per-turn caps
    (``MAX_ACTIONS_PER_TURN`` actions, of which ``MAX_MESSAGES_PER_TURN`` messages). Every
    dispatch of a player's own answer counts, refused ones included (a refusal costs work too);
    the owner acting between ticks is not counted."""

    def __init__(self) -> None:
        self._turn: int | None = None
        self._counts: dict[str, list[int]] = {}

    def take(self, player: str, tool: Any, turn: int) -> str | None:
        """Count one action; the refusal reason when a cap is reached, else None."""
        if turn != self._turn:
            self._turn, self._counts = turn, {}
        c = self._counts.setdefault(player, [0, 0])
        if c[0] >= MAX_ACTIONS_PER_TURN:
            return f"limit: at most {MAX_ACTIONS_PER_TURN} tool actions per player per turn"
        c[0] += 1
        if tool in MESSAGE_TOOLS:
            if c[1] >= MAX_MESSAGES_PER_TURN:
                return f"limit: at most {MAX_MESSAGES_PER_TURN} messages per player per turn"
            c[1] += 1
        return None
