"""Agent runners for the live arena: sandboxed JS code, HTTP callbacks, OpenAI-compatible LLMs.

All three return an ``AgentResult`` and fall back to ``fallback_harvest(w) = 0.2 * (1 + 0.05 w)``
on any failure, recording the error instead of raising.
"""

from __future__ import annotations

from bdpd_jax.host.agents.base import AgentResult, capacity, fallback_harvest
from bdpd_jax.host.agents.code import CodeAgent
from bdpd_jax.host.agents.http import HttpAgent
from bdpd_jax.host.agents.llm import LLMAgent
from bdpd_jax.host.agents.transport import make_client

__all__ = ["AgentResult", "CodeAgent", "HttpAgent", "LLMAgent", "capacity", "fallback_harvest", "make_client"]
