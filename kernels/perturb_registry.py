"""The registry of perturbation types (004_* Table A.1 and any type added later).

A type is one function ``apply(game, view, slot, who)`` plus one :func:`register_perturbation`
call. ``apply`` computes the arena *as if the slot fired*; the perturbation layer
(kernels/perturb.py) keeps it where the slot is due and of this type. Every reader (the layer,
config validation, the results frames, the live host's records) asks the registry when
called, so a type registered later works everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import jax

from .registry import Registry

if TYPE_CHECKING:  # engines import the perturbation layer's registry users: the name is for the type checker
    from .engines.base import Engine

ALL = -1  # slot.player = ALL: every player


class View(NamedTuple):
    """What a perturbation may act on in one arena (all current values)."""

    engine: dict[str, jax.Array]  # str -> float[]: the effective engine numbers of the layer (``PerturbLayer.fields``)
    visible: jax.Array  # bool[len(OBS_VARS)], the observability mask
    engine_state: object  # the engine's state pytree (stock etc.)
    wealth: jax.Array  # float[N]
    strategy: jax.Array  # int32[N], index into Game.policies


# apply(game, view, slot, who) -> (changes, logged, target):
#   changes: the View fields it rewrites ("engine" as {field: value}); logged: float[] the
#   acted-on quantity after the change; target: int32[] (player, ALL or a variable index) or None.
Apply = Callable[..., tuple[dict[str, Any], jax.Array, "jax.Array | None"]]
Target = Literal["none", "player", "variable"]


class PerturbType(NamedTuple):
    name: str
    apply: Apply
    requires: str | None  # the engine feature it needs (Engine.features); None = engine-agnostic
    engine_field: str | None  # engine params field it rewrites (its effective copy lives in state)
    target: Target  # what the logged target int means
    label: str  # target label in the results: "regen_rate", "wealth" -> wealth[i], "visible" -> visible[var]
    description: str = ""


#: the perturbation type registry (kernels/registry.py): kernel entries; the config's spec
#: models are bdpd_jax.config.perturbations.ARENA_SPECS, filled by the same one call
TYPES: Registry[PerturbType] = Registry("type", "perturbation type")


def register_perturbation(
    name: str,
    apply: Apply,
    *,
    requires: str | None = None,
    engine_field: str | None = None,
    target: Target = "none",
    label: str | None = None,
    description: str = "",
) -> PerturbType:
    """Register a perturbation type's kernel part (appended: existing codes never change)."""
    if target not in ("none", "player", "variable"):
        raise ValueError(f"target: must be 'none', 'player' or 'variable', got {target!r}")
    pt = PerturbType(name, apply, requires, engine_field, target, label or engine_field or name, description)
    return TYPES.register(name, pt)


# the registry's reads under their public names (kernels/registry.py: read when called,
# ValueError naming ``type`` and the known names): unregister (the last only), names in code
# order, a name's int code, an entry by name or code
unregister_perturbation = TYPES.unregister
type_names = TYPES.names
type_code = TYPES.code
perturbation_type = TYPES.lookup


def supported(engine: Engine, type_: str) -> bool:
    """Whether ``type_`` applies to ``engine`` (its ``features`` name what it has)."""
    need = perturbation_type(type_).requires
    return need is None or need in engine.features
