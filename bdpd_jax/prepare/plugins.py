"""Validated plugin specs become the plugin layer: the static ``PluginLayer`` and one params
pytree per plugin (kernels/plugins.py). The specs are config's: bdpd_jax/config/plugins.py."""

from __future__ import annotations

from typing import Any

from ..config.game import ArenaConfig
from ..kernels import plugins as K


def plugin_layer(config: ArenaConfig) -> tuple[K.PluginLayer, tuple[Any, ...]] | None:
    """The static layer and its params (a tuple, one per plugin), or None without plugins."""
    specs = list(getattr(config, "plugins", []) or [])
    if not specs:
        return None
    return K.PluginLayer(types=tuple(s.type for s in specs)), tuple(s.params(config) for s in specs)


__all__ = ["plugin_layer"]
