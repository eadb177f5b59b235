"""Live-arena host: cheap-talk bus, agent runners (code / HTTP / LLM), tool schemas, persistence.

Nothing here touches the JAX kernels; the Arena that ties these pieces to the kernel step
lives elsewhere. Import submodules directly (``bdpd_jax.host.messages`` etc.) so that importing
the package stays cheap.
"""

from __future__ import annotations

__all__ = ["messages", "persist", "tools", "agents"]
