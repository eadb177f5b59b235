"""LLM agents over any OpenAI-compatible ``/chat/completions`` endpoint (aiohttp, no SDK).

Prompt-cache discipline (spec 003 "Timing & prompt-cache discipline"): the system prompt, the
rules and the tool schemas are rendered once per agent and are byte-identical on every call
(``prefix_messages()``, ``tools``); the volatile part (turn, inbox of last turn's messages,
observation) is appended after them as the single last user message, never spliced in.

The model acts through tool calls: the six cheap-talk tools of ``bdpd_jax.host.tools`` (unless
``no_talk``), ``harvest(amount)`` and, when the arena runs a ``voluntary_sanction`` plugin
(``sanction=True``), ``sanction(target, reason)``. Each tool call is validated on its own: bad
JSON arguments, unknown tools or wrong types produce an error entry for that call and never a crash. The harvest
comes from the first valid ``harvest`` call (or, for models without tool support, a JSON
``{"harvest": n}`` message body); without one the fallback ``0.2 * capacity(w)`` applies (or the
player's fixed ``fallback``, in stock units). Options GovSim runs its players with (docs/semantics/live.md
§14): ``rules_text`` replaces the BDPD rules paragraph, ``whole_units`` reads an answer as whole
units from 0 to the pool, and in an arena that talks between harvests (``discussion``) the
``speak`` tool is in every call's list and :meth:`LLMAgent.speak` asks for one utterance. The
whole request runs under a hard ``timeout_ms`` deadline (spec ``agentTimeout``), the completion
is capped while it streams (``MAX_COMPLETION_BYTES``, :mod:`~bdpd_jax.host.agents.transport`).
The key (``api_key`` or the environment variable ``api_key_env``) is the operator's: a live
arena builds this agent from a credential name (:mod:`~bdpd_jax.host.operator`).
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import Any

import orjson

from bdpd_jax.host._json import dumps_compact
from bdpd_jax.host.agents.base import AgentResult, Utterance, check_wealth, fallback_harvest, join_errors, valid_harvest
from bdpd_jax.host.agents.http import check_timeout_ms, check_url
from bdpd_jax.host.agents.transport import HttpClient, TransportError, loads_capped, make_client, too_deep
from bdpd_jax.host.messages import MAX_MESSAGE_LEN
from bdpd_jax.host.tools import (
    HARVEST_TOOL,
    MAX_ACTIONS_PER_TURN,
    SPEAK_TOOL,
    speak_schema,
    tool_schemas,
    validate_action,
    validate_speak,
)

DEFAULT_TIMEOUT_MS: float = 30000.0
MAX_COMPLETION_BYTES: int = 1024 * 1024  # a chat completion, read off the wire (then decoded)

_RULES = """You are a player in the BDPD commons arena, a repeated harvesting game on a shared,
regenerating resource. Every turn all players decide simultaneously how much to harvest.
Harvesting adds to your wealth; over-harvesting depletes the commons, and a collapsed commons
yields nothing to anyone. Your capacity is 1 + 0.05 * your wealth.
Each turn you receive an observation (possibly noisy or partial) as JSON in the last message.
You must call the `harvest` tool exactly once with the amount you take this turn."""
_DEFAULT_FALLBACK = """ If you do not,
a fallback harvest of 0.2 * capacity is applied for you."""
# after a replacing rules text (a scenario's own wording): how to answer, in the protocol's words
_HARVEST_PROTOCOL = """
Each turn, call the `harvest` tool exactly once with the amount you take."""

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
) -> str:
    """The fixed system text of one agent (identical for every call of the run). ``rules``
    replaces the BDPD rules (a scenario's own wording); ``fallback``: the harvest of a
    missing or invalid answer, in stock units (None: 0.2 x capacity)."""
    fb = _DEFAULT_FALLBACK if fallback is None else f" If you do not, you harvest {fallback:g}."
    parts = [(_RULES if rules is None else rules + _HARVEST_PROTOCOL) + fb]
    if whole_units:
        parts.append(_WHOLE_UNITS)
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
    if len(calls) > MAX_ACTIONS_PER_TURN + 1:  # the talk actions and one harvest
        errors.append(
            f"tool_calls: {len(calls) - MAX_ACTIONS_PER_TURN - 1} past the first "
            f"{MAX_ACTIONS_PER_TURN + 1} dropped unread"
        )
        calls = calls[: MAX_ACTIONS_PER_TURN + 1]
    for i, call in enumerate(calls):
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
    for i, call in enumerate(calls[: MAX_ACTIONS_PER_TURN + 1] if isinstance(calls, list) else []):
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


class LLMAgent:
    """A player driven by a chat model through tool calls, with a cache-stable prompt prefix."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        *,
        api_key: str | None = None,
        player_id: str | None = None,
        timeout_ms: float = DEFAULT_TIMEOUT_MS,
        no_talk: bool = False,
        client: HttpClient | None = None,
        system_prompt: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        tool_choice: str | None = "auto",
        extra_body: dict[str, Any] | None = None,
        sanction: bool = False,
        rules_text: str | None = None,
        fallback: float | None = None,
        whole_units: bool = False,
        discussion: bool = False,
    ) -> None:
        self.base_url = check_url(base_url).rstrip("/")
        if not isinstance(model, str) or not model:
            raise ValueError(f"model: must be a non-empty string, got {model!r}")
        if api_key_env is not None and (not isinstance(api_key_env, str) or not api_key_env):
            raise ValueError(f"api_key_env: must be a non-empty string or None, got {api_key_env!r}")
        if api_key is not None and (not isinstance(api_key, str) or not api_key):
            raise ValueError("api_key: must be a non-empty string or None")
        if player_id is not None and (not isinstance(player_id, str) or not player_id):
            raise ValueError(f"player_id: must be a non-empty string or None, got {player_id!r}")
        self.model = model
        self.api_key_env = api_key_env
        self._api_key = api_key  # the operator's; never logged
        self.timeout_ms = check_timeout_ms(timeout_ms)
        self.no_talk = bool(no_talk)
        self._client = client
        self._owns_client = client is None
        self.last_usage: dict[str, Any] | None = None
        self.sanction = bool(sanction)  # the arena offers the sanction tool
        if rules_text is not None and (not isinstance(rules_text, str) or not rules_text):
            raise ValueError("rules_text: must be a non-empty string or None")
        if fallback is not None and valid_harvest(fallback) is None:
            raise ValueError(f"fallback: must be a finite number >= 0 or None, got {fallback!r}")
        if temperature is not None and valid_harvest(temperature) is None:
            raise ValueError(f"temperature: must be a finite number >= 0 or None, got {temperature!r}")
        self.rules_text = rules_text  # replaces the BDPD rules in the prompt (a scenario's wording)
        self.fallback = None if fallback is None else float(fallback)  # stock units; None: 0.2 x capacity
        self.whole_units = bool(whole_units)  # answers read as whole units from 0 to the pool
        self.discussion = bool(discussion)  # the arena talks between harvests: the speak tool
        # Frozen as JSON text: every call re-emits exactly these bytes.
        self._prefix_json = json.dumps(
            [{"role": "system", "content": self.system_text(player_id, system_prompt)}], ensure_ascii=False
        )
        self._tools_json = json.dumps(self.tool_list(), ensure_ascii=False)
        params: dict[str, Any] = {}
        if temperature is not None:
            params["temperature"] = float(temperature)
        if max_tokens is not None:
            params["max_tokens"] = int(max_tokens)
        if tool_choice is not None:
            params["tool_choice"] = tool_choice
        self._params = {**params, **(extra_body or {})}

    def system_text(self, player_id: str | None, extra: str | None) -> str:
        """The fixed system prompt (rendered once, at construction)."""
        return render_system_prompt(
            player_id,
            self.no_talk,
            extra,
            sanction=self.sanction,
            rules=self.rules_text,
            fallback=self.fallback,
            whole_units=self.whole_units,
            discussion=self.discussion,
        )

    def tool_list(self) -> list[dict[str, Any]]:
        """The tool schemas (rendered once, at construction): one list for both phases, so the
        cached prefix is the same for harvests and utterances."""
        tools = tool_schemas(self.no_talk, sanction=self.sanction)
        return tools + [speak_schema()] if self.discussion else tools

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tool schemas sent with every request (same bytes every call)."""
        return json.loads(self._tools_json)

    def prefix_messages(self) -> list[dict[str, Any]]:
        """The cache-stable message prefix (system + rules), a fresh copy each time."""
        return json.loads(self._prefix_json)

    def volatile_message(self, obs: dict[str, Any], inbox: list[dict[str, Any]] | None) -> dict[str, str]:
        """The last user message: this turn's observation and last turn's inbox."""
        tail: dict[str, Any] = {}
        if "turn" in obs:
            tail["turn"] = obs["turn"]
        if not self.no_talk:
            tail["inbox"] = inbox if inbox is not None else obs.get("inbox", [])
            tail["toolResults"] = obs.get("toolResults", [])  # 003_*: what last turn's calls returned
        if "discussion" in obs:  # last turn's report and utterances
            tail["discussion"] = obs["discussion"]
        tail["observation"] = {k: v for k, v in obs.items() if k not in ("inbox", "toolResults", "discussion")}
        return {"role": "user", "content": dumps_compact(tail)}

    def request_body(
        self, obs: dict[str, Any], inbox: list[dict[str, Any]] | None = None, tail: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """The full chat-completions request for one turn (``tail``: another last message)."""
        last = tail if tail is not None else self.volatile_message(obs, inbox)
        return {"model": self.model, "messages": self.prefix_messages() + [last], "tools": self.tools, **self._params}

    def _get_client(self) -> HttpClient:
        if self._client is None:
            self._client = make_client(max_connections=4)
        return self._client

    async def aclose(self) -> None:
        """Close the client if this agent created it."""
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    def _headers(self) -> dict[str, str]:
        key = self._api_key or (os.environ.get(self.api_key_env) if self.api_key_env else None)
        return {"authorization": f"Bearer {key}"} if key else {}

    async def complete(
        self, obs: dict[str, Any], inbox: list[dict[str, Any]] | None = None, tail: dict[str, str] | None = None
    ) -> Any:
        """POST this turn's request under the deadline; the decoded completion, capped while it
        streams in. Any failure raises TransportError (its text is the recorded error)."""
        try:
            body_text = json.dumps(self.request_body(obs, inbox, tail), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TransportError(f"obs: not serialisable ({exc})") from None
        status, raw = await self._get_client().post(
            f"{self.base_url}/chat/completions",
            body_text.encode(),
            self._headers(),
            self.timeout_ms / 1000.0,
            MAX_COMPLETION_BYTES,
        )
        if not 200 <= status < 300:
            raise TransportError(f"http: status {status}")
        data = loads_capped(raw)
        self.last_usage = data.get("usage") if isinstance(data, dict) else None
        return data

    async def decide(
        self, obs: dict[str, Any], wealth: float, inbox: list[dict[str, Any]] | None = None, pool: float | None = None
    ) -> AgentResult:
        """Ask the model for this turn's tool calls; the fallback harvest on any failure.
        ``pool``: the stock before harvesting, the cap of a whole-unit answer."""
        w = check_wealth(wealth)
        t0 = time.perf_counter()

        def done(harvest: float | None, actions: list[dict[str, Any]], errors: list[str]) -> AgentResult:
            elapsed = (time.perf_counter() - t0) * 1000.0
            if harvest is None and self.fallback is not None:
                return AgentResult(self.fallback, join_errors(errors), actions, elapsed, True, stock_units=True)
            if harvest is None:
                return AgentResult(fallback_harvest(w), join_errors(errors), actions, elapsed, True)
            if self.whole_units:
                harvest = whole_units(harvest, pool, errors)
            return AgentResult(harvest, join_errors(errors), actions, elapsed, False)

        try:
            data = await self.complete(obs, inbox)
        except TransportError as exc:
            return done(None, [], [str(exc).replace("no response", "no completion")])
        return done(*parse_completion(data, no_talk=self.no_talk))

    async def speak(self, context: dict[str, Any]) -> Utterance:
        """Ask the model for one utterance of the discussion phase (``context``: the report and
        the transcript so far, ``"phase": "discussion"``); the same prefix and tools as a turn."""
        try:
            data = await self.complete({}, None, {"role": "user", "content": dumps_compact(context)})
        except TransportError as exc:
            return Utterance(None, None, str(exc).replace("no response", "no completion"))
        return parse_utterance(data)


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


__all__ = ["LLMAgent", "decode_arguments", "parse_completion", "parse_utterance", "render_system_prompt", "whole_units"]
