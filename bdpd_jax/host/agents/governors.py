"""The governance agents a live arena's owner may attach (issue 17): HTTP, LLM, scripted.

Each has ``async answer(observation)`` giving a raw answer in the GovAction vocabulary (the LLM
one: ``(answer, errors)`` from its tool calls); :mod:`bdpd_jax.host.live.governance_agent` validates
it and writes it into the kernel. The LLM regulator reuses the players' LLM machinery
(:class:`~bdpd_jax.host.agents.llm.LLMAgent`: cache-stable prefix, capped completion,
deadline, and its calls through the arena's :class:`~bdpd_jax.host.agents.llm_client.LLMCalls`:
the endpoint's limits, the cache, the token account) with its own prompt and tools.
"""

from __future__ import annotations

from typing import Any

from bdpd_jax.host.agents.llm import LLMAgent, decode_arguments, wire_text
from bdpd_jax.host.agents.tools import function_tool
from bdpd_jax.host.agents.transport import TransportError, loads_capped
from bdpd_jax.host.jsonio import dumps_bytes

LIFT = "lift"  # JSON for cap = +inf (lift the regulator's cap): strict JSON has no Infinity
MAX_GOV_RESPONSE_BYTES: int = 16 * 1024  # an answer is three numbers


class HttpGovernor:
    """POST the observation; the answer is a :class:`GovAnswer` body, capped while it streams."""

    def __init__(self, url: str, timeout_ms: float, client) -> None:
        self.url, self.timeout_ms, self.client = url, timeout_ms, client

    async def answer(self, obs: dict[str, Any]) -> Any:
        status, raw = await self.client.post(
            self.url, dumps_bytes(obs), {}, self.timeout_ms / 1000.0, MAX_GOV_RESPONSE_BYTES
        )
        if not 200 <= status < 300:
            raise TransportError(f"http: status {status}")
        return loads_capped(raw)


_GOV_RULES = """You are the regulator of a BDPD commons arena, a repeated game in which players
harvest a shared, regenerating resource; over-harvesting depletes it and a collapsed commons
yields nothing to anyone. Before every turn you receive, as JSON in the last message, the
outcome of the last turn (stock, regeneration, the five governance metrics, every player's
harvest, wealth and sanctions, the pact violations) and your own previous actions.
You act only through tools, each at most once per turn; what you call applies from the start
of the coming turn, before the players decide. Calling no tool changes nothing.
- `propose_cap(maxHarvest)`: a harvest cap binding every player (replaces your previous cap);
  breaches are pact violations, sanctioned by the arena's sanction rules.
- `lift_cap()`: remove your cap.
- `scale_ladder(factor)`: every sanction amount is multiplied by `factor` (1 = as configured).
- `set_regen(value)`: set the commons' regeneration rate."""


def governor_tools() -> list[dict[str, Any]]:
    """The LLM regulator's tools (the GovAction vocabulary)."""
    return [
        function_tool(
            "propose_cap",
            "Impose a harvest cap on every player from the coming turn.",
            {"maxHarvest": {"type": "number", "exclusiveMinimum": 0}},
        ),
        function_tool("lift_cap", "Remove your harvest cap from the coming turn.", {}),
        function_tool(
            "scale_ladder",
            "Multiply every sanction amount by factor (absolute, 1 = as configured).",
            {"factor": {"type": "number", "minimum": 0}},
        ),
        function_tool(
            "set_regen",
            "Set the commons' regeneration rate from the coming turn.",
            {"value": {"type": "number", "minimum": 0}},
        ),
    ]


_TOOL_FIELDS = {
    "propose_cap": ("cap", "maxHarvest"),
    "lift_cap": ("cap", None),
    "scale_ladder": ("ladder_scale", "factor"),
    "set_regen": ("regen", "value"),
}


class LLMGovernor(LLMAgent):
    """The regulator as a chat model: the players' LLM machinery (cache-stable prefix, capped
    completion, deadline) with the regulator's prompt and tools."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, no_talk=True, **kw)

    def system_text(self, player_id: str | None, extra: str | None) -> str:
        return _GOV_RULES + ("\n" + extra if extra else "")

    def tool_list(self) -> list[dict[str, Any]]:
        return governor_tools()

    def volatile_message(self, obs: dict[str, Any], inbox: Any = None) -> dict[str, str]:
        return {"role": "user", "content": wire_text(obs)}

    async def answer(self, obs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        data = await self.complete(obs)
        try:
            calls = data["choices"][0]["message"].get("tool_calls") or []
        except (KeyError, IndexError, TypeError, AttributeError):
            raise TransportError("response: no choices[0].message in completion") from None
        body: dict[str, Any] = {}
        errors: list[str] = []
        for i, call in enumerate(calls[: len(_TOOL_FIELDS) * 2] if isinstance(calls, list) else []):
            try:
                fn = call.get("function") if isinstance(call, dict) else None
                fn = fn if isinstance(fn, dict) else {}
                name = fn.get("name")
                if name not in _TOOL_FIELDS:
                    raise ValueError(f"tool: unknown tool {name!r:.80}")
                field, arg = _TOOL_FIELDS[name]
                args = decode_arguments(fn.get("arguments"))
                if field in body:
                    raise ValueError(f"{field}: set twice (first call kept)")
                body[field] = LIFT if arg is None else args.get(arg)
            except ValueError as exc:
                errors.append(f"tool_calls[{i}] dropped: {exc}")
        return body, errors


class ScriptedGovernor:
    """Answers from a list by turn (past its end: no action). An entry ``{"action": {...},
    "error": ..., "usage"?: ...}`` (replay: the logged action, error and an LLM agent's
    tokens) or a bare answer ``{...}``."""

    def __init__(self, script: list[dict]) -> None:
        self.script, self.calls = list(script), 0
        self._usage: dict[str, int] | None = None

    async def answer(self, obs: dict[str, Any]) -> Any:
        entry = self.script[self.calls] if self.calls < len(self.script) else {"action": {}}
        self.calls += 1
        logged = entry.get("usage") if isinstance(entry, dict) and "action" in entry else None
        self._usage = logged if isinstance(logged, dict) else None
        return entry

    def take_usage(self) -> dict[str, int] | None:
        """The logged tokens of this turn's answer (a replayed LLM agent's), once."""
        out, self._usage = self._usage, None
        return out


__all__ = ["HttpGovernor", "LLMGovernor", "ScriptedGovernor", "governor_tools", "LIFT", "MAX_GOV_RESPONSE_BYTES"]
