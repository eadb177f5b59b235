"""The registry of pact term types (001_* 'term schema'), read when called.

A term type is one checker function plus one :func:`register_term` call. A checker is a
*limit*: from the pact table and the turn context it gives the harvest a party of each slot
may take (a breach is actual > limit + eps); complying players clip to it. A type's JSON
numbers (:class:`TermField`) are stored in the slot's two numbers ``max_harvest`` and
``tolerance`` with their bounds, from which every validation derives (the kernel, the config,
the live tools and their JSON schema). The pact table itself is kernels/pacts.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp

from .registry import Registry

if TYPE_CHECKING:  # pacts.py imports this module, so the table's name is for the type checker only
    from .pacts import Pacts


class TurnContext(NamedTuple):
    """What a term's limit may read besides its pact: per-turn values over all decisions."""

    group_mean: jax.Array  # float[], mean actual harvest over the players playing this turn


# limit(pacts, ctx) -> float[P]: the harvest a party of each slot may take (read for the slots
# of its own type only); a party breaches when its actual harvest exceeds limit + eps.
Limit = Callable[["Pacts", TurnContext], jax.Array]
NUMBERS: tuple[str, ...] = ("max_harvest", "tolerance")  # the two numbers a slot stores


class TermField(NamedTuple):
    """One number of a term type's JSON terms, stored in one of the slot's two ``NUMBERS``.

    The bound is the whole validation rule: the kernel (an invalid proposal is not stored),
    the config, the tools and their JSON schema all derive from it."""

    name: str  # JSON key, e.g. "maxHarvest"
    number: str  # "max_harvest" | "tolerance": which of the slot's numbers holds it
    minimum: float = 0.0
    exclusive: bool = False  # value > minimum (else >=)
    default: float | None = None  # None: required
    description: str = ""


class TermType(NamedTuple):
    """A registered pact term type (001_* 'term schema')."""

    name: str
    limit: Limit
    fields: tuple[TermField, ...]
    detail: str  # violation detail, formatted with actual, limit, mean (floats)
    description: str = ""

    def valid(self, max_harvest: jax.Array, tolerance: jax.Array) -> jax.Array:
        """bool: every field within its bound (the kernel side of the schema)."""
        num = {"max_harvest": max_harvest, "tolerance": tolerance}
        ok = jnp.ones(jnp.shape(max_harvest), bool)
        for f in self.fields:
            x = num[f.number]
            ok = ok & ((x > f.minimum) if f.exclusive else (x >= f.minimum))
        return ok


#: the term type registry (one registry pattern: kernels/registry.py); the config reads the
#: fields of each entry, so a term type is one registration for kernel and config alike
TERMS: Registry[TermType] = Registry("termType", "term type")


def register_term(
    name: str,
    limit: Limit,
    fields: tuple[TermField, ...] | list[TermField],
    *,
    detail: str = "harvested {actual:.3f} > limit {limit:.3f}",
    description: str = "",
) -> TermType:
    """Register a term type (appended: existing type codes never change). ``limit`` is its
    checker: what a party may harvest under the pact this turn (a breach: actual > limit +
    eps); it also gives complying players their cap, evaluated on last turn's context.
    ``fields``: its JSON numbers, each stored in one of the slot's ``NUMBERS`` with its bound.
    Config validation, the live tools (schema and checks), the registry's terms and detail
    strings and the results frames all read this registry when called."""
    fields = tuple(fields)
    for f in fields:
        if f.number not in NUMBERS:
            raise ValueError(f"fields: {f.name!r} must be stored in one of {NUMBERS}, got {f.number!r}")
    if len({f.number for f in fields}) != len(fields):
        raise ValueError(f"fields: two fields of {name!r} share one stored number")
    return TERMS.register(name, TermType(name, limit, fields, detail, description))


# the registry's reads under their public names (kernels/registry.py: read when called,
# ValueError naming termType and the known names): unregister (the last only), names in code
# order, a name's int code, an entry by name or code
unregister_term = TERMS.unregister
term_names = TERMS.names
term_code = TERMS.code
term_type = TERMS.lookup


def valid_terms(term: jax.Array, max_harvest: jax.Array, tolerance: jax.Array) -> jax.Array:
    """bool (shape of term): the term schema of 001_* (known type; each field within its
    bound, e.g. maxHarvest > 0, tolerance >= 0)."""
    ok = jnp.zeros(jnp.shape(term), bool)
    for code, name in enumerate(term_names()):
        ok = jnp.where(term == code, term_type(name).valid(max_harvest, tolerance), ok)
    return ok


def _harvest_cap(p: Pacts, ctx: TurnContext) -> jax.Array:
    """001_*: a breach is actual > maxHarvest + eps (a harvest equal to the cap is no breach)."""
    return p.max_harvest


def _no_aggression(p: Pacts, ctx: TurnContext) -> jax.Array:
    """001_*: limit = groupMean x (1 + tolerance); a breach is actual > limit + eps."""
    return ctx.group_mean * (1.0 + p.tolerance)


register_term(
    "harvest_cap",
    _harvest_cap,
    (TermField("maxHarvest", "max_harvest", 0.0, exclusive=True, description="cap per party per turn"),),
    detail="harvested {actual:.3f} > cap {limit:.3f}",
    description="each party harvests at most maxHarvest",
)
register_term(
    "no_aggression",
    _no_aggression,
    (TermField("tolerance", "tolerance", 0.0, default=0.0, description="allowed excess over the group mean"),),
    detail="harvested {actual:.3f} > fair share {limit:.3f} (group mean {mean:.3f})",
    description="each party harvests at most groupMean x (1 + tolerance)",
)
HARVEST_CAP, NO_AGGRESSION = 0, 1  # the codes of the two built-in types (registered first)
