"""Owner-fired perturbations of a live arena (004_* A.2 ``POST /perturb``).

:func:`owner_slot` and :func:`fire_perturbation` are the body of ``Arena.perturb`` (which
checks the arena's status): the spec is compiled against the arena's kernel config, applied to its state through
``kernels.perturb.apply_perturbation`` (jitted once per game), written to ``turns.jsonl`` at
once as an owner event line (``{"event": "ownerPerturbation", ...}``: a firing after the last
tick, or before a crash, is not lost, so replay reproduces summary.json) and listed in the
next turn record (``ownerPerturbations``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import BaseModel

from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.config.perturbations import arena_specs
from bdpd_jax.host.live.registry import num
from bdpd_jax.kernels import perturb as pk
from bdpd_jax.kernels.perturb import PerturbLayer
from bdpd_jax.prepare.perturbations import compile_spec
from bdpd_jax.results.decode import target_label, type_label

if TYPE_CHECKING:
    from bdpd_jax.host.live.arena_run import ArenaRun


@functools.lru_cache(maxsize=32)
def _owner_apply(game):
    return jax.jit(functools.partial(pk.apply_perturbation, game))


def owner_slot(run: ArenaRun, kernel_config: ArenaConfig, spec: str | dict[str, Any] | BaseModel) -> tuple[Any, Any]:
    """(spec, compiled slot) of ``spec`` (a config spec id or an ad-hoc spec) for the arena whose
    run state is ``run``; ``kernel_config``: its kernels' view (``Arena.kernel_config``).
    ValueError when the spec is unknown or its type cannot be fired in this arena."""
    if isinstance(spec, str):
        found = [sp for sp in arena_specs(run.config) if sp.id == spec]
        if not found:
            raise ValueError(f"specId: no perturbation {spec!r} in the config; known: {run.spec_ids}")
        spec = found[0]
    slot = compile_spec(spec, kernel_config, run.game.policies)
    if not any(isinstance(ly, PerturbLayer) and type_label(slot.code) in ly.types for ly in run.game.layers):
        raise ValueError(
            f"spec.type: {type_label(slot.code)!r} cannot be fired in this arena; create it with perturbable=True"
        )
    return spec, slot


def fire_perturbation(run: ArenaRun, spec: Any, slot: Any) -> dict[str, Any]:
    """Apply ``slot`` (:func:`owner_slot`) now to the kernel state ``run`` owns; logged at once
    and listed in the next turn record. See ``Arena.perturb``."""
    state = jax.tree_util.tree_map(jnp.asarray, run.state)
    new, rec = _owner_apply(run.game)(state, slot, run.params)
    run.set_state(jax.tree_util.tree_map(np.asarray, new))
    kind = type_label(rec["code"])
    entry = {
        "turn": run.turn + 1,
        "spec": spec if isinstance(spec, dict) else spec.model_dump(mode="json"),
        "type": kind,
        "target": target_label(kind, int(rec["target"])),
        "value": num(rec["value"]),
    }
    run.owner_perturbation(entry)
    return entry


__all__ = ["owner_slot", "fire_perturbation"]
