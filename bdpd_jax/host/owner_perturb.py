"""Owner-fired perturbations of a live arena (004_* A.2 ``POST /perturb``).

:func:`fire_perturbation` is the body of ``Arena.perturb``: the spec is compiled against
the arena's kernel config, applied to its state through
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

from bdpd_jax.kernels import perturb as pk
from bdpd_jax.kernels.perturb import PerturbLayer
from bdpd_jax.perturb_results import target_label
from bdpd_jax.specs import arena_specs, compile_spec
from bdpd_jax.host.batch_runner import slice_batch
from bdpd_jax.host.registry import num

if TYPE_CHECKING:
    from bdpd_jax.host.arena import Arena


@functools.lru_cache(maxsize=32)
def _owner_apply(game):
    return jax.jit(functools.partial(pk.apply_perturbation, game))


def fire_perturbation(arena: Arena, spec: str | dict) -> dict[str, Any]:
    """Fire ``spec`` (a config spec id or an ad-hoc spec) on ``arena`` now; see ``Arena.perturb``."""
    if arena.status != "running" or arena._in_tick:
        raise ValueError(f"status: perturbations are fired between ticks of a running arena ({arena.status!r})")
    if arena.done:
        raise ValueError("status: the game is over")
    if isinstance(spec, str):
        found = [sp for sp in arena_specs(arena.config) if sp.id == spec]
        if not found:
            raise ValueError(f"specId: no perturbation {spec!r} in the config; known: {arena._spec_ids}")
        spec = found[0]
    slot = compile_spec(spec, arena.kernel_config(), arena.game.policies)
    if not any(isinstance(ly, PerturbLayer) and pk.type_names()[int(slot.code)] in ly.types for ly in arena.game.layers):
        raise ValueError(f"spec.type: {pk.type_names()[int(slot.code)]!r} cannot be fired in this arena; "
                         "create it with perturbable=True")
    batch = arena._ensure_batch()
    state = jax.tree_util.tree_map(jnp.asarray, slice_batch(batch.state, arena._b))
    new, rec = _owner_apply(arena.game)(state, slot, arena.params)
    batch.set_state(arena._b, new)
    kind = pk.type_names()[int(rec["code"])]
    entry = {"turn": arena.turn + 1, "spec": spec if isinstance(spec, dict) else spec.model_dump(mode="json"),
             "type": kind, "target": target_label(kind, int(rec["target"])), "value": num(rec["value"])}
    arena._owner_fired.append(entry)
    arena.log_event("ownerPerturbation", entry)
    return entry


__all__ = ["fire_perturbation"]
