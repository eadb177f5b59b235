"""Player kinds of a live arena (a join's ``agentType``): one :class:`PlayerKind` per kind, one
:func:`register_player_kind` call each, read when called.

A kind says what the host needs to know of its players as properties (is it decided outside
the kernel, can asking it wait, does it call out over HTTP, does it speak in a discussion,
does it use the operator's LLM endpoints, its per-call time cap, its dashboard label), checks a
join's fields and builds the agent. The host never compares kind names: it reads these
properties (``player_kind(spec.agent_type).waits``). Shipped: ``builtin``, ``code``, ``http``,
``llm``, ``scripted``; a new kind (say a websocket player) is one subclass and one call.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from bdpd_jax.host.agents.base import AgentResult
from bdpd_jax.host.agents.code import DEFAULT_TIMEOUT_MS as JS_TIMEOUT_MS
from bdpd_jax.host.agents.code import CodeAgent, compile_strategy
from bdpd_jax.host.agents.govsim_agent import GovSimAgent
from bdpd_jax.host.agents.http import HttpAgent, check_url
from bdpd_jax.host.agents.llm import LLMAgent
from bdpd_jax.host.agents.scripted import ScriptedAgent
from bdpd_jax.host.live.operator import Operator
from bdpd_jax.kernels.policies import BUILTINS
from bdpd_jax.kernels.registry import Registry


@dataclass(frozen=True)
class AgentContext:
    """What building an agent may read besides its spec: the arena's choices and shared pieces
    (``players.make_agent(spec, ctx)``; ``ArenaCallers`` holds them for an arena)."""

    timeout_ms: float  # the arena's agentTimeout; a kind's make_agent gets the player's deadline
    no_talk: bool  # the arena offers no talk tools
    client: Any = None  # the arena's HTTP client (remote kinds)
    executor: Any = None  # the JS worker pool (code)
    operator: Operator | None = None  # the operator's endpoints and credentials
    sanction: bool = False  # the arena offers the sanction tool
    discussion: bool = False  # the arena talks between harvests
    whole_units: bool = False  # the model's requests are whole units
    owner: str | None = None  # the arena's id (its share of the JS workers)
    llm: Any = None  # the arena's ArenaLLM (limits, cache, tokens; arena_llm.py reads this module)


class PlayerKind(abc.ABC):
    """The interface of a player kind, declared once. Subclasses set the class properties and
    define :meth:`make_agent`; :meth:`check` and :meth:`check_operator` refuse a join."""

    name: ClassVar[str]  # the join's ``agentType``
    label: ClassVar[str]  # what the dashboard shows for its players
    external: ClassVar[bool] = True  # decided outside the kernel (asked every turn)
    waits: ClassVar[bool] = False  # asking it can wait: a tick needs an event loop, holds no CPU slot
    remote: ClassVar[bool] = False  # calls out over HTTP: the arena opens a client for it
    speaks: ClassVar[bool] = False  # speaks in a discussion
    uses_llm: ClassVar[bool] = False  # an LLM's player: credentials, LLM options, token reports
    timeout_cap_ms: ClassVar[float | None] = None  # a per-call cap below the arena's agentTimeout
    stands_in: ClassVar[bool] = False  # plays a logged player in a replay: records show the logged kind
    example: ClassVar[dict[str, Any]] = {}  # a join body of this kind (docs; bdpd_jax.testing joins it)

    def check(self, spec: Any) -> None:  # noqa: B027 - a hook: most kinds need no field of their own
        """Raise ValueError naming the field when ``spec`` lacks what this kind needs."""

    def check_operator(self, spec: Any, operator: Operator) -> None:
        """Refuse what only the operator may choose (ValueError); only LLM kinds take credentials."""
        if getattr(spec, "credential", None) is not None:
            raise ValueError(f"credential: only LLM players use credentials, got {spec.credential!r}")

    @abc.abstractmethod
    def make_agent(self, spec: Any, ctx: AgentContext) -> Any:
        """The agent that decides for a player of this kind (None: the kernel decides)."""

    async def ask(self, agent: Any, env: dict[str, Any], wealth: float, pool: float | None = None) -> AgentResult:
        """One decision of ``agent`` (``pool``: the stock before the harvest, whole-unit models)."""
        result: AgentResult = await agent.decide(env, wealth)
        return result


#: the player kind registry (kernels/registry.py), keyed by ``agentType``
MAX_KIND_LABEL = 64  # a logged kind name shown as is (a folder is not trusted to bound it)

PLAYER_KINDS: Registry[PlayerKind] = Registry("agentType", "player kind")


def register_player_kind(kind: PlayerKind) -> PlayerKind:
    """Register a player kind under its ``name`` (a join's ``agentType``)."""
    if not isinstance(kind, PlayerKind):
        raise ValueError(f"kind: a PlayerKind instance, got {kind!r:.80}")
    return PLAYER_KINDS.register(kind.name, kind)


def unregister_player_kind(name: str) -> None:
    """Remove the last registered kind (tests that must leave the registry as they found it)."""
    PLAYER_KINDS.unregister(name)


def player_kind(name: str) -> PlayerKind:
    """The registered kind ``name`` (ValueError naming agentType and the known kinds)."""
    return PLAYER_KINDS.get_entry(name)


def logged_kind(name: Any) -> PlayerKind | None:
    """The kind a saved folder names, or None for one this process has not registered (a
    folder written by a process with its own kinds): listing and showing such a folder must
    not fail, so its players are shown by their logged name, as external ones."""
    try:
        return player_kind(name)
    except ValueError:
        return None


def shown_kind(name: Any) -> tuple[str, bool]:
    """A logged player's ``(kindLabel, external)`` for the dashboard: the registered kind's,
    else its logged name (bounded) as an external player's."""
    kind = logged_kind(name)
    return (kind.label, kind.external) if kind is not None else (str(name)[:MAX_KIND_LABEL], True)


class Builtin(PlayerKind):
    name, label, external = "builtin", "built-in", False
    example: ClassVar[dict[str, Any]] = {"strategy": "conservative"}

    def check(self, spec: Any) -> None:
        if spec.strategy not in BUILTINS:
            raise ValueError(f"strategy: unknown built-in {spec.strategy!r}; known: {sorted(BUILTINS)}")

    def make_agent(self, spec: Any, ctx: AgentContext) -> None:
        return None


class Code(PlayerKind):
    name, label, waits, timeout_cap_ms = "code", "JS code", True, JS_TIMEOUT_MS
    example: ClassVar[dict[str, Any]] = {"strategyCode": "function decide(obs, memory) { return 1; }"}

    def check(self, spec: Any) -> None:
        if spec.strategy_code is None:
            raise ValueError("strategyCode: required for agentType 'code'")
        compile_strategy(spec.strategy_code)  # ValueError with the parser's message

    def make_agent(self, spec: Any, ctx: AgentContext) -> CodeAgent:
        return CodeAgent(
            cast(str, spec.strategy_code),
            rng_seed=spec.rng_seed,
            pool=ctx.executor,
            timeout_ms=ctx.timeout_ms,
            no_talk=ctx.no_talk,
            owner=ctx.owner,
        )


class Http(PlayerKind):
    name, label, waits, remote = "http", "HTTP agent", True, True
    example: ClassVar[dict[str, Any]] = {"url": "http://127.0.0.1:8000/decide"}

    def check(self, spec: Any) -> None:
        check_url(spec.url)

    def check_operator(self, spec: Any, operator: Operator) -> None:
        operator.check_http_url(spec.url)
        super().check_operator(spec, operator)

    def make_agent(self, spec: Any, ctx: AgentContext) -> HttpAgent:
        return HttpAgent(cast(str, spec.url), ctx.timeout_ms, no_talk=ctx.no_talk, client=ctx.client)


class Llm(PlayerKind):
    name, label, waits, remote, speaks, uses_llm = "llm", "LLM agent", True, True, True, True
    example: ClassVar[dict[str, Any]] = {"model": "gpt-4o-mini", "baseUrl": "http://127.0.0.1:8000/v1"}

    def check(self, spec: Any) -> None:
        if spec.base_url is not None:
            check_url(spec.base_url)
        if not spec.model:
            raise ValueError(f"model: required for an LLM agent, got {spec.model!r}")

    def check_operator(self, spec: Any, operator: Operator) -> None:
        operator.check_llm_choice(spec)

    def make_agent(self, spec: Any, ctx: AgentContext) -> LLMAgent:
        op = ctx.operator or Operator()
        self.check_operator(spec, op)
        govsim = spec.architecture == "govsim"
        extra: dict[str, Any] = {"scenario": spec.scenario}
        if govsim:
            extra.update(persona=spec.persona, embeddings=spec.embeddings or "auto")
        endpoint = op.llm_endpoint(spec)
        return (GovSimAgent if govsim else LLMAgent)(
            model=cast(str, spec.model),
            **endpoint,
            calls=None if ctx.llm is None else ctx.llm.calls_for(endpoint["base_url"]),
            player_id=spec.name,
            timeout_ms=ctx.timeout_ms,
            no_talk=ctx.no_talk,
            client=ctx.client,
            system_prompt=spec.system_prompt,
            temperature=spec.temperature,
            sanction=ctx.sanction,
            rules_text=spec.rules_text,
            fallback=spec.fallback_harvest,
            discussion=ctx.discussion,
            whole_units=ctx.whole_units,
            answer_format=spec.answer_format or ("text" if govsim else "tool"),
            **extra,
        )

    async def ask(self, agent: Any, env: dict[str, Any], wealth: float, pool: float | None = None) -> AgentResult:
        result: AgentResult = await agent.decide(env, wealth, inbox=env.get("inbox"), pool=pool)
        return result


class Scripted(PlayerKind):
    """Plays recorded turns at once (replay, tests); speaks its logged utterances."""

    name, label, speaks, stands_in = "scripted", "scripted", True, True
    example: ClassVar[dict[str, Any]] = {"script": [{"harvest": 1.0}]}

    def check(self, spec: Any) -> None:
        if not spec.script:
            raise ValueError(
                f"script: a non-empty list of turns is required for agentType 'scripted', got {spec.script!r}"
            )

    def make_agent(self, spec: Any, ctx: AgentContext) -> ScriptedAgent:
        return ScriptedAgent(cast(list[dict[str, Any]], spec.script), no_talk=ctx.no_talk)


for _kind in (Builtin(), Code(), Http(), Llm(), Scripted()):
    register_player_kind(_kind)

__all__ = [
    "PLAYER_KINDS",
    "AgentContext",
    "PlayerKind",
    "logged_kind",
    "player_kind",
    "shown_kind",
    "register_player_kind",
    "unregister_player_kind",
]
