"""Player tool surface (spec 003): OpenAI function schemas and action validation.

Six cheap-talk/pact tools (``broadcast``, ``send_private``, ``announce_intended_harvest``,
``propose_pact``, ``accept_pact``, ``pledge``) plus the ``harvest`` action tool. An action is a
flat dict ``{"tool": name, **arguments}``; HTTP agents return such dicts directly and LLM tool
calls are converted to them. ``--no-talk`` (``no_talk=True``) removes the six talk tools and the
optional ``announced`` field of ``harvest``; ``harvest`` stays. Schemas are built once and are
deterministic, so they can sit in a cache-stable prompt prefix.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from bdpd_jax.host.messages import MAX_MESSAGE_LEN, truncate_text

MAX_ID_CHARS: int = 128  # player and pact ids named in an action

TALK_TOOLS: tuple[str, ...] = (
    "broadcast", "send_private", "announce_intended_harvest", "propose_pact", "accept_pact", "pledge",
)
HARVEST_TOOL: str = "harvest"
PACT_TERM_TYPES: tuple[str, ...] = ("harvest_cap", "no_aggression")
MESSAGE_TOOLS: tuple[str, ...] = ("broadcast", "send_private", "announce_intended_harvest")

# Per player per turn (docs/semantics.md §13): the tool actions one answer may carry (extra
# entries are dropped unread) and, of those dispatched, how many may be messages.
MAX_ACTIONS_PER_TURN: int = 16
MAX_MESSAGES_PER_TURN: int = 8
MAX_PARTIES: int = 64  # names in one propose_pact


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required,
                       "additionalProperties": False}}}


_TEXT = {"type": "string", "description": f"message text (longer than {MAX_MESSAGE_LEN} chars is truncated)"}
_TERMS = {
    "type": "object",
    "description": "pact terms: {\"type\": \"harvest_cap\", \"maxHarvest\": >0} or "
                   "{\"type\": \"no_aggression\", \"tolerance\": >=0 (optional, default 0)}",
    "properties": {"type": {"type": "string", "enum": list(PACT_TERM_TYPES)},
                   "maxHarvest": {"type": "number", "exclusiveMinimum": 0},
                   "tolerance": {"type": "number", "minimum": 0}},
    "required": ["type"],
}


def _harvest_schema(no_talk: bool) -> dict[str, Any]:
    props: dict[str, Any] = {"amount": {"type": "number", "minimum": 0,
                                        "description": "units to harvest from the commons this turn"}}
    if not no_talk:
        props["announced"] = {"type": "number", "minimum": 0,
                              "description": "optional: harvest you publicly announce you intend to take "
                                             "(same as announce_intended_harvest)"}
    return _fn(HARVEST_TOOL, "Submit your harvest for this turn. Call exactly once.", props, ["amount"])


_TALK_SCHEMAS: tuple[dict[str, Any], ...] = (
    _fn("broadcast", "Send a text message to every other player (they read it next turn).",
        {"text": _TEXT}, ["text"]),
    _fn("send_private", "Send a text message to one player (they read it next turn).",
        {"target": {"type": "string", "description": "recipient player id"}, "text": _TEXT},
        ["target", "text"]),
    _fn("announce_intended_harvest", "Announce the harvest you intend to take (numeric, public).",
        {"value": {"type": "number", "minimum": 0}}, ["value"]),
    _fn("propose_pact", "Propose a pact to named parties; you accept it implicitly.",
        {"parties": {"type": "array", "items": {"type": "string"}, "minItems": 1}, "terms": _TERMS},
        ["parties", "terms"]),
    _fn("accept_pact", "Accept a pact proposed to you.",
        {"pactId": {"type": "string"}}, ["pactId"]),
    _fn("pledge", "Unilaterally cap your own harvest (self-binding pact, active at once).",
        {"maxHarvest": {"type": "number", "exclusiveMinimum": 0}}, ["maxHarvest"]),
)

TOOL_SCHEMAS: tuple[dict[str, Any], ...] = _TALK_SCHEMAS + (_harvest_schema(False),)
NO_TALK_TOOL_SCHEMAS: tuple[dict[str, Any], ...] = (_harvest_schema(True),)


def tool_schemas(no_talk: bool = False) -> list[dict[str, Any]]:
    """A fresh deep copy of the schema list for one run (full surface, or harvest-only)."""
    return copy.deepcopy(list(NO_TALK_TOOL_SCHEMAS if no_talk else TOOL_SCHEMAS))


def tool_names(no_talk: bool = False) -> tuple[str, ...]:
    """Names of the tools exposed under the given talk setting."""
    return (HARVEST_TOOL,) if no_talk else TALK_TOOLS + (HARVEST_TOOL,)


# -- validation -------------------------------------------------------------------------------
def _num(field: str, value: Any, *, strict_positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{field}: must be a finite number, got {value!r:.80}")
    if strict_positive and value <= 0:
        raise ValueError(f"{field}: must be > 0, got {value!r:.80}")
    if value < 0:
        raise ValueError(f"{field}: must be >= 0, got {value!r:.80}")
    return float(value)


def _str(field: str, value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
        raise ValueError(f"{field}: must be a non-empty string of at most {MAX_ID_CHARS} chars, got {value!r:.80}")
    return value


def _terms(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"terms: must be an object, got {value!r:.80}")
    kind = value.get("type")
    if kind not in PACT_TERM_TYPES:
        raise ValueError(f"terms.type: must be one of {list(PACT_TERM_TYPES)}, got {kind!r:.80}")
    if kind == "harvest_cap":
        return {"type": kind, "maxHarvest": _num("terms.maxHarvest", value.get("maxHarvest"),
                                                  strict_positive=True)}
    out: dict[str, Any] = {"type": kind}
    if value.get("tolerance") is not None:
        out["tolerance"] = _num("terms.tolerance", value["tolerance"])
    return out


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
        return {"tool": tool, "parties": [_str("parties[]", p) for p in parties],
                "terms": _terms(a.get("terms"))}
    if tool == "accept_pact":
        return {"tool": tool, "pactId": _str("pactId", a.get("pactId"))}
    if tool == "pledge":
        return {"tool": tool, "maxHarvest": _num("maxHarvest", a.get("maxHarvest"), strict_positive=True)}
    out: dict[str, Any] = {"tool": tool, "amount": _num("amount", a.get("amount"))}
    if not no_talk and a.get("announced") is not None:
        out["announced"] = _num("announced", a["announced"])
    return out


def validate_actions(raw: Any, *, no_talk: bool = False) -> tuple[list[dict[str, Any]], list[str]]:
    """Validate a list of actions; bad entries are dropped and described in the error list."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [f"actions: must be a list, got {type(raw).__name__}"]
    good: list[dict[str, Any]] = []
    errors: list[str] = []
    if len(raw) > MAX_ACTIONS_PER_TURN:
        errors.append(f"actions: {len(raw) - MAX_ACTIONS_PER_TURN} past the first {MAX_ACTIONS_PER_TURN} dropped unread")
        raw = raw[:MAX_ACTIONS_PER_TURN]
    for i, item in enumerate(raw):
        try:
            good.append(validate_action(item, no_talk=no_talk))
        except ValueError as exc:
            errors.append(f"actions[{i}] dropped: {exc}")
    return good, errors
