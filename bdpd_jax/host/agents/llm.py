"""LLM agents over any OpenAI-compatible ``/chat/completions`` endpoint (aiohttp, no SDK).

Prompt-cache discipline (spec 003 "Timing & prompt-cache discipline"): the system prompt, the
rules and the tool schemas are rendered once per agent and are byte-identical on every call
(``prefix_messages()``, ``tools``); the volatile part (turn, inbox of last turn's messages,
observation) is appended after them as the single last user message, never spliced in.

The model acts through tool calls: the six cheap-talk tools of ``bdpd_jax.host.agents.tools`` (unless
``no_talk``), ``harvest(amount)`` and, when the arena runs a ``voluntary_sanction`` plugin
(``sanction=True``), ``sanction(target, reason)``. Each tool call is validated on its own: bad
JSON arguments, unknown tools or wrong types produce an error entry for that call and never a crash. The harvest
comes from the first valid ``harvest`` call (or, for models without tool support, a JSON
``{"harvest": n}`` message body); without one the fallback ``0.2 * capacity(w)`` applies (or the
player's fixed ``fallback``, in stock units). Options GovSim runs its players with (docs/semantics/live/agents.md
§14): ``rules_text`` replaces the BDPD rules paragraph, ``whole_units`` reads an answer as whole
units from 0 to the pool, and in an arena that talks between harvests (``discussion``) the
``speak`` tool is in every call's list and :meth:`LLMAgent.speak` asks for one utterance. The
whole request runs under a hard ``timeout_ms`` deadline (spec ``agentTimeout``), the completion
is capped while it streams (``MAX_COMPLETION_BYTES``, :mod:`~bdpd_jax.host.agents.transport`).
The key (``api_key`` or the environment variable ``api_key_env``) is the operator's: a live
arena builds this agent from a credential name (:mod:`~bdpd_jax.host.live.operator`). Every call
goes through the agent's :class:`~bdpd_jax.host.agents.llm_client.LLMCalls` (the operator's
per-endpoint limits and retries, the arena's response cache and token account; issue 38).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from bdpd_jax.host.agents.answers import ANSWER_FORMATS, text_answer
from bdpd_jax.host.agents.base import AgentResult, Utterance, check_wealth, fallback_harvest, join_errors, valid_harvest
from bdpd_jax.host.agents.govsim_prompts import govsim_observation, scenario_of
from bdpd_jax.host.agents.http import check_timeout_ms, check_url
from bdpd_jax.host.agents.llm_client import LLMCalls
from bdpd_jax.host.agents.llm_protocol import (
    decode_arguments,
    parse_completion,
    parse_utterance,
    render_system_prompt,
    whole_units,
)
from bdpd_jax.host.agents.tools import (
    speak_schema,
    tool_schemas,
)
from bdpd_jax.host.agents.transport import ClientSlot, HttpClient, TransportError
from bdpd_jax.host.jsonio import dumps_bytes

DEFAULT_TIMEOUT_MS: float = 30000.0
MAX_COMPLETION_BYTES: int = 1024 * 1024  # a chat completion, read off the wire (then decoded)


def wire_text(obj: Any) -> str:
    """A message's JSON text: strict and compact, keys in order, non-finite floats as null
    (``dumps_bytes``: orjson in one pass; the ``json`` module's dumps, loads and copy took
    ~90 us of an LLM call's host CPU, bench/README.md)."""
    return dumps_bytes(obj).decode()


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
        answer_format: str = "tool",
        scenario: str | None = None,
        calls: LLMCalls | None = None,
    ) -> None:
        #: a GovSim cell's scenario: the observation keeps only what the scenario has (live/agents.md §15)
        self.scenario = None if scenario is None else scenario_of(scenario)
        if answer_format not in ANSWER_FORMATS:
            raise ValueError(f"answer_format: one of {list(ANSWER_FORMATS)}, got {answer_format!r}")
        self.answer_format = answer_format  # how a harvest is read (answers.py)
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
        self._client = ClientSlot(client)
        self.last_usage: dict[str, Any] | None = None
        # limits, retries, cache and token accounting (issue 38): the arena's, else plain calls
        self.calls = calls if calls is not None else LLMCalls(self.base_url)
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
        # Frozen: rendered once, then parsed once from that text (plain JSON, no shared state
        # with the renderers); every request reuses these objects, never mutated, so every
        # call re-emits exactly the same bytes without copying or re-parsing them (issue 38).
        self._prefix_json = json.dumps(
            [{"role": "system", "content": self.system_text(player_id, system_prompt)}], ensure_ascii=False
        )
        self._tools_json = json.dumps(self.tool_list(), ensure_ascii=False)
        self._prefix: list[dict[str, Any]] = json.loads(self._prefix_json)
        self._tools: list[dict[str, Any]] = json.loads(self._tools_json)
        params: dict[str, Any] = {}
        if temperature is not None:
            params["temperature"] = float(temperature)
        if max_tokens is not None:
            params["max_tokens"] = int(max_tokens)
        if tool_choice is not None and answer_format != "text":  # text: no tools are sent
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
            answer_format=self.answer_format,
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
        seen = {k: v for k, v in obs.items() if k not in ("inbox", "toolResults", "discussion")}
        tail["observation"] = seen if self.scenario is None else govsim_observation(self.scenario, seen)
        return {"role": "user", "content": wire_text(tail)}

    def request_body(
        self, obs: dict[str, Any], inbox: list[dict[str, Any]] | None = None, tail: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """The full chat-completions request for one turn (``tail``: another last message). The
        prefix and tools are the frozen objects themselves (read-only: the body is only
        serialised and hashed), not copies."""
        last = tail if tail is not None else self.volatile_message(obs, inbox)
        tools = {} if self.answer_format == "text" else {"tools": self._tools}
        return {"model": self.model, "messages": [*self._prefix, last], **tools, **self._params}

    async def aclose(self) -> None:
        """Close the client if this agent created it."""
        await self._client.aclose()

    def _headers(self) -> dict[str, str]:
        key = self._api_key or (os.environ.get(self.api_key_env) if self.api_key_env else None)
        return {"authorization": f"Bearer {key}"} if key else {}

    async def complete(
        self, obs: dict[str, Any], inbox: list[dict[str, Any]] | None = None, tail: dict[str, str] | None = None
    ) -> Any:
        """POST this turn's request under the deadline; the decoded completion, capped while it
        streams in. Any failure raises TransportError (its text is the recorded error)."""
        data = await self.calls.complete(
            self._client.get(),
            f"{self.base_url}/chat/completions",
            lambda: self.request_body(obs, inbox, tail),  # made when the call may go (llm_client)
            self._headers(),
            self.timeout_ms / 1000.0,
            MAX_COMPLETION_BYTES,
        )
        self.last_usage = data.get("usage") if isinstance(data, dict) else None
        return data

    def take_usage(self) -> dict[str, int] | None:
        """This turn's tokens so far (``LLMCalls.take_turn``; the turn record's ``usage``)."""
        return self.calls.take_turn()

    async def decide(
        self, obs: dict[str, Any], wealth: float, inbox: list[dict[str, Any]] | None = None, pool: float | None = None
    ) -> AgentResult:
        """Ask the model for this turn's tool calls; the fallback harvest on any failure.
        ``pool``: the stock before harvesting, the cap of a whole-unit answer."""
        w = check_wealth(wealth)
        t0 = time.perf_counter()

        record: dict[str, Any] | None = None

        def done(harvest: float | None, actions: list[dict[str, Any]], errors: list[str]) -> AgentResult:
            elapsed = (time.perf_counter() - t0) * 1000.0
            if harvest is None and self.fallback is not None:
                return AgentResult(self.fallback, join_errors(errors), actions, elapsed, True, True, record)
            if harvest is None:
                return AgentResult(fallback_harvest(w), join_errors(errors), actions, elapsed, True, record=record)
            if self.whole_units:
                harvest = whole_units(harvest, pool, errors)
            return AgentResult(harvest, join_errors(errors), actions, elapsed, False, record=record)

        try:
            data = await self.complete(obs, inbox)
        except TransportError as exc:
            return done(None, [], [str(exc).replace("no response", "no completion")])
        harvest, actions, errors = parse_completion(data, no_talk=self.no_talk)
        if self.answer_format != "tool":
            harvest, errors, answer = text_answer(data, harvest, errors, self.answer_format)
            record = {"answer": answer}
        return done(harvest, actions, errors)

    async def speak(self, context: dict[str, Any]) -> Utterance:
        """Ask the model for one utterance of the discussion phase (``context``: the report and
        the transcript so far, ``"phase": "discussion"``); the same prefix and tools as a turn."""
        try:
            data = await self.complete({}, None, {"role": "user", "content": wire_text(context)})
        except TransportError as exc:
            return Utterance(None, None, str(exc).replace("no response", "no completion"))
        return parse_utterance(data)


__all__ = ["LLMAgent", "decode_arguments", "parse_completion", "parse_utterance", "render_system_prompt", "whole_units"]
