"""Player specs of a live arena (004_* A.2 ``join`` payload) and the agents they make.

``agentType``: ``builtin`` (a kernel heuristic, decided inside the jitted kernel ``decide``),
``code`` (``strategyCode``: sandboxed JS, :class:`CodeAgent`), ``http`` (``url``:
:class:`HttpAgent`), ``llm`` (``model`` + an operator's ``credential`` name or a ``baseUrl`` the
operator allows: :class:`LLMAgent`, :mod:`~bdpd_jax.host.live.operator`) or ``scripted``
(``script``: a list of recorded turns; what replay and tests use). Everything is validated at
join: a JS syntax error is rejected with the parser's message, a bad URL by name, a field over
its size limit (``MAX_*_CHARS``) by name.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Literal, Protocol, cast

from pydantic import ConfigDict, Field, model_validator

from bdpd_jax.config.base import ConfigModel, wire_name
from bdpd_jax.config.limits import (
    MAX_CODE_CHARS,
    MAX_LABEL_CHARS,
    MAX_NAME_CHARS,
    MAX_PROMPT_CHARS,
    MAX_TURNS,
    MAX_URL_CHARS,
    Key,
    Label,
    short_repr,
)
from bdpd_jax.host.agents.base import AgentResult, Utterance, check_wealth, fallback_harvest, valid_harvest
from bdpd_jax.host.agents.code import DEFAULT_TIMEOUT_MS as JS_TIMEOUT_MS
from bdpd_jax.host.agents.code import CodeAgent, compile_strategy
from bdpd_jax.host.agents.govsim_agent import GovSimAgent
from bdpd_jax.host.agents.govsim_prompts import scenario_of
from bdpd_jax.host.agents.http import HttpAgent, check_url
from bdpd_jax.host.agents.llm import LLMAgent
from bdpd_jax.host.live.arena_llm import ArenaLLM
from bdpd_jax.host.live.interrupt import CUT_REASONS, ConversationCut
from bdpd_jax.host.live.operator import Operator, redact_url
from bdpd_jax.host.live.tools import first_entries, validate_action, validate_speak
from bdpd_jax.kernels.policies import BUILTINS

# Size limits of a join body's free-text fields (checked at join): bdpd_jax/config/limits.py
MAX_MODEL_CHARS: int = MAX_LABEL_CHARS
MAX_RULES_CHARS: int = 8192  # an LLM player's ``rulesText`` (a scenario's whole rules)
MAX_TEMPERATURE: float = 2.0  # the OpenAI-compatible range of ``temperature``


class LivePlayerConfig(ConfigModel):
    """One player joining a live arena. ``displayName`` is accepted for ``name``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_by_name=True)  # name or displayName
    agent_type: Literal["builtin", "code", "http", "llm", "scripted"] = "builtin"
    name: str | None = Field(
        None, alias="displayName", serialization_alias="name", min_length=1, max_length=MAX_NAME_CHARS
    )
    private_resource: float = Field(30.0, ge=0)
    active_from: int = Field(1, ge=1, le=MAX_TURNS)  # the first turn it acts (PlayerConfig.active_from)
    # builtin
    strategy: Label = "conservative"
    intensity: float = Field(0.5, gt=0, le=1)
    reduction_factor: float = Field(1.0, ge=0)
    talk: dict | None = None  # scripted talk of a builtin (bdpd_jax/config/governance.py)
    # code
    strategy_code: str | None = Field(None, max_length=MAX_CODE_CHARS)
    rng_seed: int | None = None
    # http / llm
    url: str | None = Field(None, max_length=MAX_URL_CHARS)
    base_url: str | None = Field(None, max_length=MAX_URL_CHARS)
    model: str | None = Field(None, max_length=MAX_MODEL_CHARS)
    credential: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)  # a name from the operator's list
    api_key_env: Key | None = None  # refused: credentials are the operator's (kept to say so by name)
    system_prompt: str | None = Field(None, max_length=MAX_PROMPT_CHARS)
    temperature: float | None = Field(None, ge=0, le=MAX_TEMPERATURE)
    rules_text: str | None = Field(None, min_length=1, max_length=MAX_RULES_CHARS)  # replaces the BDPD rules
    fallback_harvest: float | None = Field(None, ge=0)  # stock units on a missing/invalid answer (None: 0.2 x capacity)
    timeout_ms: float | None = Field(None, gt=0)  # only shorter than the arena's (checked at join)
    # llm: GovSim's protocol (issue 37; docs/semantics/live/agents.md §15)
    architecture: Literal["minimal", "govsim"] | None = None  # None: minimal
    answer_format: Literal["tool", "text", "auto"] | None = None  # None: tool (minimal), text (govsim)
    scenario: Label | None = None  # a GovSim scenario's wording for the govsim architecture
    persona: str | None = Field(None, min_length=1, max_length=MAX_PROMPT_CHARS)  # the player's goals
    embeddings: Literal["auto", "endpoint", "lexical"] | None = None  # None: auto
    # scripted: [{"harvest": h, "actions": [...]}, ...] by turn (turn 1 first); past the end
    # the last entry repeats
    script: list[dict] | None = None

    @model_validator(mode="after")
    def _fields_of_type(self) -> LivePlayerConfig:
        t = self.agent_type
        if self.api_key_env is not None:
            raise ValueError(
                "apiKeyEnv: a player cannot choose a credential; pick `credential`, a name from the operator's list"
            )
        if t == "builtin" and self.strategy not in BUILTINS:
            raise ValueError(f"strategy: unknown built-in {self.strategy!r}; known: {sorted(BUILTINS)}")
        if t == "code":
            if self.strategy_code is None:
                raise ValueError("strategyCode: required for agentType 'code'")
            compile_strategy(self.strategy_code)  # ValueError with the parser's message
        if t == "http":
            check_url(self.url)
        if t == "llm":
            if self.base_url is not None:
                check_url(self.base_url)
            if not self.model:
                raise ValueError(f"model: required for agentType 'llm', got {self.model!r}")
        if self.scenario is not None:
            scenario_of(self.scenario)  # ValueError naming an unknown scenario
        for k in ("persona", "embeddings"):
            if getattr(self, k) is not None and self.architecture != "govsim":
                raise ValueError(f"{wire_name(LivePlayerConfig, k)}: an option of architecture 'govsim'")
        if t == "scripted" and not self.script:
            raise ValueError(
                f"script: a non-empty list of turns is required for agentType 'scripted', got {self.script!r}"
            )
        llm_only = ("architecture", "answer_format", "scenario", "persona", "embeddings")
        for k in ("rules_text", "fallback_harvest", *llm_only):  # (temperature stays ignored elsewhere)
            if t != "llm" and getattr(self, k) is not None:
                raise ValueError(
                    f"{wire_name(LivePlayerConfig, k)}: an option of LLM players (agentType 'llm'), got agentType {t!r}"
                )
        if t != "builtin" and self.talk is not None:
            raise ValueError("talk: scripted talk is for builtin players; external players use the tools")
        return self

    @property
    def external(self) -> bool:
        return self.agent_type != "builtin"

    @property
    def waits(self) -> bool:
        """Whether asking this player can wait (code, HTTP, LLM: a tick then needs an event
        loop); a scripted player answers at once, a builtin is not asked."""
        return self.agent_type in ("code", "http", "llm")

    @property
    def player_id(self) -> str:
        """The name in play (``playerId``): a joining player without one is named then
        (``arena_args.joining_player``), so every player of a run has one."""
        if self.name is None:
            raise ValueError("name: a player in play has a name (it is given one when it joins)")
        return self.name

    def public(self) -> dict[str, Any]:
        """What meta.json stores: the spec without the strategy code (private to its owner)."""
        d = self.model_dump(mode="json", exclude_none=True)
        if "strategyCode" in d:
            d["strategyCode"] = f"<{len(self.strategy_code or '')} chars>"
        for k in ("url", "baseUrl"):  # tokens in URLs stay out of meta.json
            if k in d:
                d[k] = redact_url(d[k])
        return d


class ScriptedAgent:
    """Plays a fixed list of turns ``{"harvest": h, "actions": [...]}`` (replay, tests).

    ``harvest`` None (or missing) gives the fallback harvest, as a failed call would. Anyone
    may join one, so every field is bounded as an LLM's answer is: actions past
    ``MAX_ANSWER_ENTRIES`` are dropped unread, texts are cut by the tools' validation and an
    ``error`` of any shape is recorded as bounded text (``truncate_error``).
    """

    def __init__(self, script: list[dict], *, no_talk: bool = False) -> None:
        if not script:
            raise ValueError("script: must be a non-empty list of turns")
        self.script = list(script)
        self.no_talk = no_talk
        self.calls = 0
        self.seen: deque[dict[str, Any]] = deque(maxlen=100)  # the last envelopes received (tests, audit)
        self._spoken: dict[Any, int] = {}  # turn -> utterances given in it, less one
        self._usage: dict[str, int] | None = None  # the logged tokens of the last turn decided

    async def decide(self, obs: dict[str, Any], wealth: float, inbox: Any = None) -> AgentResult:
        w = check_wealth(wealth)
        t0 = time.perf_counter()
        entry = self.script[min(self.calls, len(self.script) - 1)]
        self.seen.append(obs)
        self.calls += 1
        self._usage = entry.get("usage") if isinstance(entry.get("usage"), dict) else None
        acts, errors = [], []
        raw = entry.get("actions") or []
        if not isinstance(raw, list):
            errors.append(f"actions: must be a list, got {type(raw).__name__}")
            raw = []
        for i, a in enumerate(first_entries(raw, "actions", errors)):  # as many as an LLM's answer
            try:
                acts.append(validate_action(a, no_talk=self.no_talk))
            except ValueError as exc:
                errors.append(f"actions[{i}] dropped: {exc}")
        h = entry.get("harvest")
        err = entry["error"] if "error" in entry else ("; ".join(errors) or None)  # replay keeps the logged error
        if h is not None and valid_harvest(h) is None:
            errors.append(f"harvest: must be a finite number >= 0, got {short_repr(h)}")
            err, h = "; ".join(errors), None
        if h is None:
            return AgentResult(
                fallback_harvest(w),
                entry.get("error") or err or "scripted: no harvest",
                acts,
                (time.perf_counter() - t0) * 1000,
                True,
                record=entry.get("record") or None,
            )
        # a harvest given (or logged) is what the kernel is fed, in stock units: never rescaled
        return AgentResult(
            float(h),
            err,
            acts,
            (time.perf_counter() - t0) * 1000,
            bool(entry.get("fallback", False)),
            stock_units=True,
            record=entry.get("record") or None,
        )

    def take_usage(self) -> dict[str, int] | None:
        """The tokens logged with the turn last decided (a replayed LLM player's ``usage``), once."""
        out, self._usage = self._usage, None
        return out

    async def speak(self, context: dict[str, Any]) -> Utterance:
        """The next of this turn's ``utterances`` (``[{"text", "nextSpeaker", "error"}]``) from
        the script entry of ``context["turn"]`` (an entry with that ``turn``, else the entry of
        the last decision): what replay feeds a logged LLM player's discussion back with. Past
        its last utterance of a turn whose logged conversation was cut (``discussionCut``), the
        conversation ends there as it did (:class:`ConversationCut`)."""
        t = context.get("turn")
        entry = next((e for e in self.script if e.get("turn") == t), None)
        if entry is None:
            entry = self.script[min(max(self.calls - 1, 0), len(self.script) - 1)]
        k = self._spoken[t] = self._spoken.get(t, -1) + 1
        utterances = entry.get("utterances")
        utterances = utterances if isinstance(utterances, list) else []
        if k >= len(utterances):
            if entry.get("discussionCut") in CUT_REASONS:  # the logged conversation ended here
                raise ConversationCut(entry["discussionCut"])
            return Utterance(None, None, "scripted: no utterance")
        u = utterances[k] if isinstance(utterances[k], dict) else {}
        told = {"told": u["told"]} if "told" in u else None  # a govsim meeting's exchange, as logged
        try:
            text, nxt = validate_speak({"text": u.get("text"), "nextSpeaker": u.get("nextSpeaker")})
        except ValueError as exc:
            return Utterance(None, None, u.get("error") or f"scripted: {exc}", bool(u.get("end", False)), told)
        return Utterance(text, nxt, u.get("error"), bool(u.get("end", False)), told)

    def _logged(self, turn: Any, key: str) -> Any:
        entry = next((e for e in self.script if e.get("turn") == turn), None)
        return None if entry is None else entry.get(key)

    async def summarize(self, context: dict[str, Any]) -> dict[str, Any] | None:
        """The logged summary of ``context["turn"]``'s govsim meeting (replay; live/agents.md §15)."""
        return self._logged(context.get("turn"), "summary")

    async def month_end(self, context: dict[str, Any]) -> dict[str, Any] | None:
        """The logged month end of ``context["turn"]`` (replay; live/agents.md §15); None: none logged."""
        return self._logged(context.get("turn"), "monthEnd")


class TimedSpec(Protocol):
    """What :func:`player_timeout_ms` reads: a player's or a governance agent's spec."""

    @property
    def agent_type(self) -> str: ...

    @property
    def timeout_ms(self) -> float | None: ...


def player_timeout_ms(spec: TimedSpec, timeout_ms: float) -> float:
    """The deadline of one call: the arena's ``agentTimeout`` (``timeout_ms``) unless the player
    asked for less; code agents never past the seed's 50 ms. A longer ``timeoutMs`` is refused."""
    cap = min(float(timeout_ms), JS_TIMEOUT_MS) if spec.agent_type == "code" else float(timeout_ms)
    if spec.timeout_ms is not None and spec.timeout_ms > cap:
        raise ValueError(
            f"timeoutMs: at most the arena's limit for {spec.agent_type} players ({cap:g} ms), got {spec.timeout_ms:g}"
        )
    return cap if spec.timeout_ms is None else float(spec.timeout_ms)


def make_agent(
    spec: LivePlayerConfig,
    *,
    timeout_ms: float,
    no_talk: bool,
    client=None,
    executor=None,
    operator: Operator | None = None,
    sanction: bool = False,
    discussion: bool = False,
    whole_units: bool = False,
    owner: str | None = None,
    llm: ArenaLLM | None = None,
):
    """The agent runner of an external player (None for builtins). ``sanction``: the arena
    offers the ``sanction`` tool (an LLM player then sees it in its tool list); ``discussion``:
    the arena talks between harvests (LLM players speak); ``whole_units``: the model's requests
    are whole units (an LLM's answer is read as one); ``owner``: the arena's id (a code
    player's share of the JS workers is its arena's); ``llm``: the arena's LLM calls (limits,
    cache, tokens: :class:`~bdpd_jax.host.live.arena_llm.ArenaLLM`; None: plain calls)."""
    t = spec.agent_type
    if t == "builtin":
        return None
    tmo = player_timeout_ms(spec, timeout_ms)
    if t == "code":
        return CodeAgent(
            cast(str, spec.strategy_code),
            rng_seed=spec.rng_seed,
            pool=executor,
            timeout_ms=tmo,
            no_talk=no_talk,
            owner=owner,
        )
    if t == "http":
        return HttpAgent(cast(str, spec.url), tmo, no_talk=no_talk, client=client)
    if t == "llm":
        op = operator or Operator()
        op.check_player(spec)
        kind = GovSimAgent if spec.architecture == "govsim" else LLMAgent
        extra: dict[str, Any] = {"scenario": spec.scenario}
        if spec.architecture == "govsim":
            extra.update(persona=spec.persona, embeddings=spec.embeddings or "auto")
        endpoint = op.llm_endpoint(spec)
        return kind(
            model=cast(str, spec.model),
            **endpoint,
            calls=None if llm is None else llm.calls_for(endpoint["base_url"]),
            player_id=spec.name,
            timeout_ms=tmo,
            no_talk=no_talk,
            client=client,
            system_prompt=spec.system_prompt,
            temperature=spec.temperature,
            sanction=sanction,
            rules_text=spec.rules_text,
            fallback=spec.fallback_harvest,
            discussion=discussion,
            whole_units=whole_units,
            answer_format=spec.answer_format or ("text" if spec.architecture == "govsim" else "tool"),
            **extra,
        )
    return ScriptedAgent(cast(list[dict], spec.script), no_talk=no_talk)


__all__ = [
    "MAX_CODE_CHARS",
    "MAX_NAME_CHARS",
    "MAX_PROMPT_CHARS",
    "MAX_RULES_CHARS",
    "MAX_TEMPERATURE",
    "MAX_URL_CHARS",
    "LivePlayerConfig",
    "ScriptedAgent",
    "make_agent",
    "player_timeout_ms",
]
