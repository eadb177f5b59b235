"""Validated perturbation specs become the perturbation layer: its static ``PerturbLayer``
(the types compiled in, the slot count) and its ``PerturbParams`` slots (kernels/perturb.py).

The specs themselves (models, parsing, registration) are config's: bdpd_jax/config/perturbations.py.
"""

from __future__ import annotations

from typing import Any, cast

import jax
import jax.numpy as jnp
from pydantic import BaseModel

from ..config.game import ArenaConfig
from ..config.limits import check_magnitudes
from ..config.perturbations import ARENA_SPECS, ArenaSpec, arena_specs, parse_perturbation
from ..kernels import perturb as _pk
from ..kernels.engines import ENGINES
from ..kernels.params import farr
from ..kernels.policies import BUILTINS


def compile_specs(
    specs: list[ArenaSpec], config: ArenaConfig, policies: tuple[Any, ...], n_slots: int | None = None
) -> _pk.PerturbParams:
    """Slots (leaves [P]) of ``specs``; padding slots are manual triggers that never fire."""
    rows = [s.numbers(config, f"perturbations[{s.id}]", policies) for s in specs]
    p = len(rows) if n_slots is None else n_slots
    if p < len(rows):
        raise ValueError(f"n_slots: {p} is fewer than the {len(rows)} perturbation specs")
    pad = dict(
        code=0, trigger=_pk.MANUAL, turn=0, variable=0, op=0, level=0.0, value=0.0, mode=0, player=_pk.ALL, index=0
    )
    rows = rows + [pad] * (p - len(rows))
    ints = ("code", "trigger", "turn", "variable", "op", "mode", "player", "index")
    cols = {k: [r[k] for r in rows] for k in pad}
    return _pk.PerturbParams(**{k: (jnp.asarray(v, jnp.int32) if k in ints else farr(v)) for k, v in cols.items()})


def compile_spec(spec: BaseModel | dict[str, Any], config: ArenaConfig, policies: tuple[Any, ...]) -> _pk.PerturbParams:
    """One owner-fired spec (scalar leaves) for kernels.perturb.apply_perturbation."""
    # a Table A.1 spec once the check below passes (every ARENA_SPECS model is an ArenaSpec)
    spec = cast(ArenaSpec, parse_perturbation(spec) if not isinstance(spec, BaseModel) else spec)
    if spec.type not in ARENA_SPECS:
        raise ValueError(f"spec.type: {spec.type!r} cannot be fired ad hoc; known: {list(ARENA_SPECS)}")
    check_magnitudes(spec, "spec")  # owner firings get the bound a config's specs get
    spec.check(config, "spec")
    if spec.type == "strategy_override":
        s = spec.payload.strategy
        if (BUILTINS[s] if isinstance(s, str) else s) not in policies:
            raise ValueError(
                f"spec.payload.strategy: {s!r} is not compiled into this game; "
                "list it in build(..., extra_policies=...)"
            )
    one: _pk.PerturbParams = jax.tree_util.tree_map(lambda x: x[0], compile_specs([spec], config, policies))
    return one


def perturb_layer(
    config: ArenaConfig,
    perturbable: bool = False,
    n_slots: int | None = None,
    types: tuple[str, ...] | None = None,
    specs: list[ArenaSpec] | None = None,
) -> _pk.PerturbLayer | None:
    """The static PerturbLayer of a config (None when it has no Table A.1 specs and not
    ``perturbable``). ``types``/``n_slots``: a sweep's union/largest, to share one program;
    ``specs``: the config's arena_specs when the caller has them."""

    specs = arena_specs(config) if specs is None else specs
    if not specs and not perturbable and not n_slots and not types:
        return None
    eng = ENGINES[config.model.engine_mode]
    present = {s.type for s in specs} | set(types or ())
    if perturbable:
        present |= {t for t in _pk.type_names() if _pk.supported(eng, t)}
    ordered = tuple(t for t in _pk.type_names() if t in present)
    return _pk.PerturbLayer(types=ordered, n_slots=len(specs) if n_slots is None else n_slots)


__all__ = ["compile_spec", "compile_specs", "perturb_layer"]
