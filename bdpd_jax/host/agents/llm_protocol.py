"""What an LLM player reads and writes: the system prompt (the rules, the harvest and talk
protocols, the options GovSim runs its players with) and the decoding of a chat completion
into a harvest, tool actions and errors, or a discussion utterance. Every answer is decoded
call by call: bad JSON, unknown tools or wrong types become an error for that call, never a
crash (:class:`~bdpd_jax.host.agents.llm.LLMAgent` sends and receives)."""

from __future__ import annotations

import math
from typing import Any

import orjson

from bdpd_jax.host.agents.base import Utterance, join_errors, valid_harvest
from bdpd_jax.host.agents.tools import (
    HARVEST_TOOL,
    MAX_ANSWER_ENTRIES,
    MAX_MESSAGE_LEN,
    SPEAK_TOOL,
    first_entries,
    validate_action,
    validate_speak,
)
from bdpd_jax.host.agents.transport import TransportError, loads_capped, too_deep

_RULES = """You are a player in the BDPD commons arena, a repeated harvesting game on a shared,
regenerating resource. Every turn all players decide simultaneously how much to harvest.
Harvesting adds to your wealth; over-harvesting depletes the commons, and a collapsed commons
yields nothing to anyone. Your capacity is 1 + 0.05 * your wealth.
Each turn you receive an observation (possibly noisy or partial) as JSON in the last message."""
_TOOL_LINE = """
You must call the `harvest` tool exactly once with the amount you take this turn."""
_DEFAULT_FALLBACK = """ If you do not,
a fallback harvest of 0.2 * capacity is applied for you."""
# after a replacing rules text (a scenario's own wording): how to answer, in the protocol's words
_HARVEST_PROTOCOL = """
Each turn, call the `harvest` tool exactly once with the amount you take."""

_TEXT_ANSWER = """
No tools are offered for the harvest: think it through in plain text and end with a line
"Answer: N" (N, the amount you take); the first number after the last "Answer:" is your harvest."""
_AUTO_ANSWER = """
If you cannot call tools, end a plain-text answer with a line "Answer: N" (N, the amount you take)."""

_WHOLE_UNITS = """
Harvests are whole units: an amount that is not a whole number is rounded down, and one above the
pool is cut to the pool."""

_DISCUSSION_RULES = """
Discussion: after each harvest everyone's catch is reported to all players and a discussion
follows. When the last message has "phase": "discussion", call `speak` once with what you say
(every player reads it; optionally `nextSpeaker`, the id of the player you ask to speak next);
do not call `harvest` then. Last turn's report and discussion are in your next observation."""

_TALK_RULES = f"""
Cheap talk: you may also call `broadcast`, `send_private`, `announce_intended_harvest`,
`propose_pact`, `accept_pact` and `pledge`. Messages are read by the others on the next turn
(one-turn lag); your inbox holds what others sent you last turn, and toolResults what your
tool calls of last turn returned ({{ok, scope, ...}}; ok false with a reason). Texts longer than
{MAX_MESSAGE_LEN} characters are truncated. Pacts you are party to appear in the observation;
active pacts are checked against actual harvests every turn and violations are recorded."""

_NO_TALK_RULES = """
There is no communication channel in this game: only the `harvest` tool is available."""

_NO_TALK_DISCUSSION = """
There are no messages during a turn: `harvest` (and `speak`, in the discussion) is all you have."""

_NO_TOOLS = """
There is no communication channel in this game."""

_NO_TOOLS_TALK = """
Besides your answer there is only the discussion after each harvest: when the last message has
"phase": "discussion", answer with what you say, in plain text."""

_SANCTION_RULES = """
Sanctions: you may call `sanction` with a target player id to pay a cost from your own wealth and
fine that player, if it broke a pact or over-harvested this turn (applied at the end of the turn;
no fine and no cost otherwise, and none at all if you cannot pay for every player you fine)."""


def render_system_prompt(
    player_id: str | None,
    no_talk: bool,
    extra: str | None = None,
    sanction: bool = False,
    *,
    rules: str | None = None,
    fallback: float | None = None,
    whole_units: bool = False,
    discussion: bool = False,
    answer_format: str = "tool",
) -> str:
    """The fixed system text of one agent (identical for every call of the run). ``rules``
    replaces the BDPD rules (a scenario's own wording); ``fallback``: the harvest of a
    missing or invalid answer, in stock units (None: 0.2 x capacity)."""
    fb = _DEFAULT_FALLBACK if fallback is None else f" If you do not, you harvest {fallback:g}."
    if answer_format == "text":  # no tools are offered: the text line replaces the tool line
        parts = [(_RULES if rules is None else rules) + _TEXT_ANSWER + fb]
    else:
        parts = [(_RULES + _TOOL_LINE if rules is None else rules + _HARVEST_PROTOCOL) + fb]
    if answer_format == "auto":
        parts.append(_AUTO_ANSWER)
    if whole_units:
        parts.append(_WHOLE_UNITS)
    if answer_format == "text":  # no tool at all: no talk tools either
        parts.append(_NO_TOOLS_TALK if discussion else _NO_TOOLS)
    else:
        parts.append((_NO_TALK_DISCUSSION if discussion else _NO_TALK_RULES) if no_talk else _TALK_RULES)
    if sanction:
        parts.append(_SANCTION_RULES)
    if discussion:
        parts.append(_DISCUSSION_RULES)
    if player_id is not None:
        parts.append(f"\nYour player id is {player_id!r}.")
    if extra:
        parts.append("\n" + extra)
    return "".join(parts)


def decode_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's ``arguments`` (a JSON object string) as a dict; ValueError naming what is wrong."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise ValueError(f"arguments: must be a JSON object string, got {raw!r:.80}")
    data = raw.encode("utf-8", "replace")
    if too_deep(data):
        raise ValueError(f"arguments: nested too deeply in {raw!r:.80}")
    try:
        args = orjson.loads(data) if raw.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"arguments: invalid JSON ({str(exc)[:120]}) in {raw!r:.80}") from None
    if not isinstance(args, dict):
        raise ValueError(f"arguments: must be a JSON object, got {raw!r:.80}")
    return args


def parse_completion(data: Any, *, no_talk: bool = False) -> tuple[float | None, list[dict[str, Any]], list[str]]:
    """Turn a chat-completion response into ``(harvest or None, actions, errors)``."""
    try:
        message = data["choices"][0]["message"]
        if not isinstance(message, dict):
            raise TypeError
    except (KeyError, IndexError, TypeError):
        return None, [], ["response: no choices[0].message in completion"]
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        return None, [], [f"tool_calls: must be a list, got {type(calls).__name__}"]
    harvest: float | None = None
    actions: list[dict[str, Any]] = []
    errors: list[str] = []
    for i, call in enumerate(first_entries(calls, "tool_calls", errors)):
        try:
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict):
                raise ValueError(f"function: missing in tool call {call!r:.80}")
            name = fn.get("name")
            action = validate_action({**decode_arguments(fn.get("arguments")), "tool": name}, no_talk=no_talk)
        except ValueError as exc:
            errors.append(f"tool_calls[{i}] dropped: {exc}")
            continue
        if action["tool"] != HARVEST_TOOL:
            actions.append(action)
        elif harvest is not None:
            errors.append(f"tool_calls[{i}] dropped: extra harvest call (first one kept)")
        else:
            harvest = action["amount"]
            if "announced" in action:
                actions.append({"tool": "announce_intended_harvest", "value": action["announced"]})
    if harvest is None and isinstance(message.get("content"), str):
        try:  # models without tool support may answer {"harvest": n} in plain text
            body = loads_capped(message["content"].encode("utf-8", "replace"))
            harvest = valid_harvest(body.get("harvest")) if isinstance(body, dict) else None
        except TransportError:
            harvest = None
    if harvest is None:
        errors.append("harvest: no valid harvest tool call in response")
    return harvest, actions, errors


def parse_utterance(data: Any) -> Utterance:
    """A chat completion of the discussion phase as an :class:`Utterance`: the first valid
    ``speak`` call, else a JSON ``{"text", "nextSpeaker"}`` body, else the plain text body."""
    try:
        message = data["choices"][0]["message"]
        if not isinstance(message, dict):
            raise TypeError
    except (KeyError, IndexError, TypeError):
        return Utterance(None, None, "response: no choices[0].message in completion")
    calls = message.get("tool_calls") or []
    errors: list[str] = []
    for i, call in enumerate(calls[:MAX_ANSWER_ENTRIES] if isinstance(calls, list) else []):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or fn.get("name") != SPEAK_TOOL:
            errors.append(f"tool_calls[{i}] ignored: only `speak` is read in the discussion")
            continue
        try:
            text, nxt = validate_speak(decode_arguments(fn.get("arguments")))
        except ValueError as exc:
            errors.append(f"tool_calls[{i}] dropped: {exc}")
            continue
        return Utterance(text, nxt, join_errors(errors))
    content = message.get("content")
    if isinstance(content, str) and content.strip():
        try:
            body = loads_capped(content.encode("utf-8", "replace"))
        except TransportError:
            body = None
        try:
            text, nxt = validate_speak(body) if isinstance(body, dict) else validate_speak({"text": content})
            return Utterance(text, nxt, join_errors(errors))
        except ValueError as exc:
            errors.append(f"content: {exc}")
    return Utterance(None, None, join_errors(errors + ["speak: no valid speak call or text in response"]))


def whole_units(harvest: float, pool: float | None, errors: list[str]) -> float:
    """An answer read as whole units from 0 to the pool: a fraction is floored and an amount
    over the pool cut to it, each noted in ``errors`` (the answer still stands)."""
    h = float(math.floor(harvest))
    if h != harvest:
        errors.append(f"harvest: {harvest!r} is not a whole number of units; floored to {h:g}")
    cap = None if pool is None or not math.isfinite(pool) else float(math.floor(max(pool, 0.0)))
    if cap is not None and h > cap:
        errors.append(f"harvest: {h:g} is above the pool ({cap:g} units); cut to {cap:g}")
        h = cap
    return h
