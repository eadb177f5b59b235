"""The kernel game of a live arena: its kernel config (external players on the placeholder
policy) and the build, the batched build plus what live players need (``Arena.start``)."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from bdpd_jax.build.game import build
from bdpd_jax.build.governance import needed_slots
from bdpd_jax.config.game import ArenaConfig, PlayerConfig
from bdpd_jax.host.players import LivePlayerConfig
from bdpd_jax.host.programs import EXTERNAL, has_governance
from bdpd_jax.kernels import talk as T
from bdpd_jax.kernels.game import Game
from bdpd_jax.kernels.governance import NAME as GOV
from bdpd_jax.kernels.params import Params


def kernel_config(config: ArenaConfig, specs: list[LivePlayerConfig]) -> ArenaConfig:
    """The kernels' view: builtins as configured, external players on the placeholder."""
    players = []
    for s in specs:
        if s.external:
            players.append(PlayerConfig(strategy=EXTERNAL, name=s.name, privateResource=s.privateResource))
        else:
            players.append(PlayerConfig(strategy=s.strategy, name=s.name, privateResource=s.privateResource,
                                        intensity=s.intensity, reductionFactor=s.reductionFactor, talk=s.talk))
    data = {k: getattr(config, k) for k in ArenaConfig.model_fields if k != "players"}
    return ArenaConfig.model_validate({**data, "players": players})


def live_game(kcfg: ArenaConfig, external: np.ndarray, *, uses_tools: bool, pact_slots: int, generator: str,
              perturbable: bool, max_turns: int) -> tuple[Game, Params]:
    """(game, params) of a live arena. ``external``: bool[N], the players asked from outside;
    ``uses_tools``: some external player talks (the pact table takes proposals at any turn)."""
    # with no external talker, exactly the batched build (a governance layer only if
    # the config has governance); talkers' proposals need room in the table
    gov = {"pact_slots": max(pact_slots, needed_slots(kcfg))} if uses_tools else None
    game, params = build(kcfg, generator=generator, governance=gov,
                         perturb={"perturbable": True} if perturbable else None)
    params = dataclasses.replace(params, max_turns=jnp.asarray(int(max_turns), jnp.int32))
    if uses_tools:
        # players may propose at any turn: builtins answer proposals by their scripts
        # (the batched default, no talk config = accept) whether or not the config scripts any
        game = dataclasses.replace(game, layers=tuple(
            dataclasses.replace(ly, registry=True) if ly.name == GOV else ly for ly in game.layers))
    if has_governance(game) and external.any():
        # External players answer proposals with accept_pact only: the kernel's scripted
        # answers must neither accept nor reject for them.
        g = params.extra[GOV]
        tp = g.talk
        tp = dataclasses.replace(
            tp, accept_rule=jnp.where(jnp.asarray(external), T.NEVER, tp.accept_rule).astype(jnp.int32),
            decline_rejects=tp.decline_rejects & ~jnp.asarray(external))
        params = dataclasses.replace(params, extra={**params.extra, GOV: dataclasses.replace(g, talk=tp)})
    return game, params


__all__ = ["kernel_config", "live_game"]
