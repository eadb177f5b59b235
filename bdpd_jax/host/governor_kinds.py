"""Kinds of the owner's governance agent (a create body's ``governanceAgent.kind``): one
:class:`GovernorKind` per kind, one :func:`register_governor_kind` call each, read when called.

A kind checks its spec's fields and builds the agent that answers in the governance vocabulary
(``bdpd_jax.host.agents.governors``). What it shares with the player kind of the same name is
read from that kind, never restated: the fields it checks (a URL, a model), the operator's
checks (credentials, endpoints), the time cap, whether asking it can wait and whether it calls
out over HTTP. The host never compares
kind names (``governor_kind(spec.kind).player_kind.waits``). Shipped: ``http``, ``llm``,
``scripted`` (replay, tests, fixed policies); a new kind is one subclass and one call.

*Why a registry of its own:* a governor is no player (it answers with a governance action, not
a harvest, and the builtin and code kinds have no governor form), so the player kinds' registry
would have to carry a second agent factory most of its kinds lack.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from bdpd_jax.host.agents.governors import HttpGovernor, LLMGovernor, ScriptedGovernor
from bdpd_jax.host.live.operator import Operator
from bdpd_jax.host.player_kinds import PlayerKind, player_kind
from bdpd_jax.kernels.registry import Registry


@dataclass(frozen=True)
class GovernorContext:
    """What building a governor may read besides its spec (``Governor.start``)."""

    timeout_ms: float  # the governor's deadline (players.player_timeout_ms of its spec)
    client: Any = None  # the HTTP client (remote kinds; the arena's or the governor's own)
    operator: Operator | None = None  # the operator's endpoints and credentials
    llm: Any = None  # the arena's ArenaLLM (limits, cache, tokens), None outside an arena


class GovernorKind(abc.ABC):
    """The interface of a governance agent kind, declared once. Subclasses set ``name`` and
    define :meth:`make_agent`; :meth:`check` refuses a spec that lacks its kind's fields (its
    player kind's check unless the governor form differs)."""

    name: ClassVar[str]  # the spec's ``kind``
    example: ClassVar[dict[str, Any]] = {}  # a spec of this kind, ``kind`` aside (docs; bdpd_jax.testing)

    @property
    def player_kind(self) -> PlayerKind:
        """The player kind of the same name: its operator checks, time cap, ``waits``, ``remote``."""
        return player_kind(self.name)

    def check(self, spec: Any) -> None:
        """Raise ValueError naming the field when ``spec`` lacks what this kind needs (the
        player kind's check reads the spec's fields of the same names: ``url``, ``model``...)."""
        self.player_kind.check(spec)

    def check_operator(self, spec: Any, operator: Operator) -> None:
        """Refuse what only the operator may choose: the player kind's rule (ValueError)."""
        self.player_kind.check_operator(spec, operator)

    def read(self, reply: Any) -> tuple[Any, list[str], dict[str, Any] | None]:
        """What the agent's ``answer`` returned, as ``(answer, errors, logged)``: the answer to
        validate, the errors the agent reported itself, and a replayed entry whose logged
        error and fallback stand (None: a live answer). Default: the reply is the answer."""
        return reply, [], None

    @abc.abstractmethod
    def make_agent(self, spec: Any, ctx: GovernorContext) -> Any:
        """The agent asked before each turn: ``await agent.answer(obs)``, an answer in the
        governance vocabulary (an LLM agent's with its errors: ``(answer, errors)``)."""


#: the governance agent kind registry (kernels/registry.py), keyed by the spec's ``kind``
GOVERNOR_KINDS: Registry[GovernorKind] = Registry("kind", "governance agent kind")


def register_governor_kind(kind: GovernorKind) -> GovernorKind:
    """Register a governance agent kind under its ``name``; a player kind of that name must
    exist (its operator checks and time cap apply)."""
    if not isinstance(kind, GovernorKind):
        raise ValueError(f"kind: a GovernorKind instance, got {kind!r:.80}")
    player_kind(kind.name)  # ValueError naming agentType and the registered player kinds
    return GOVERNOR_KINDS.register(kind.name, kind)


def unregister_governor_kind(name: str) -> None:
    """Remove the last registered kind (tests that must leave the registry as they found it)."""
    GOVERNOR_KINDS.unregister(name)


def governor_kind(name: str) -> GovernorKind:
    """The registered kind ``name`` (ValueError naming ``kind`` and the known kinds)."""
    return GOVERNOR_KINDS.get_entry(name)


class Http(GovernorKind):
    name = "http"
    example: ClassVar[dict[str, Any]] = {"url": "http://127.0.0.1:8000/govern"}

    def make_agent(self, spec: Any, ctx: GovernorContext) -> HttpGovernor:
        return HttpGovernor(cast(str, spec.url), ctx.timeout_ms, ctx.client)


class Llm(GovernorKind):
    name = "llm"
    example: ClassVar[dict[str, Any]] = {"model": "gpt-4o-mini", "baseUrl": "http://127.0.0.1:8000/v1"}

    def read(self, reply: Any) -> tuple[Any, list[str], dict[str, Any] | None]:
        answer, errors = reply  # the tool calls read into an answer, and the calls refused
        return answer, list(errors), None

    def make_agent(self, spec: Any, ctx: GovernorContext) -> LLMGovernor:
        endpoint = (ctx.operator or Operator()).llm_endpoint(spec)
        return LLMGovernor(
            model=spec.model,
            **endpoint,
            timeout_ms=ctx.timeout_ms,
            client=ctx.client,
            system_prompt=spec.system_prompt,
            temperature=spec.temperature,
            calls=None if ctx.llm is None else ctx.llm.calls_for(endpoint["base_url"]),
        )


class Scripted(GovernorKind):
    """Answers from a list by turn at once (replay feeds the logged actions back this way)."""

    name = "scripted"
    example: ClassVar[dict[str, Any]] = {"script": [{"cap": 2.0}]}

    def check(self, spec: Any) -> None:  # an empty script is a governor that never acts
        if spec.script is None:
            raise ValueError("script: a list of answers by turn is required for kind 'scripted'")

    def read(self, reply: Any) -> tuple[Any, list[str], dict[str, Any] | None]:
        if isinstance(reply, dict) and "action" in reply:  # a replayed entry: its log stands
            return reply["action"], [], reply
        return reply, [], None

    def make_agent(self, spec: Any, ctx: GovernorContext) -> ScriptedGovernor:
        return ScriptedGovernor(spec.script or [])


for _kind in (Http(), Llm(), Scripted()):
    register_governor_kind(_kind)

__all__ = [
    "GOVERNOR_KINDS",
    "GovernorContext",
    "GovernorKind",
    "governor_kind",
    "register_governor_kind",
    "unregister_governor_kind",
]
