"""The kernel game of a live arena: its kernel config (external players on the placeholder
policy) and the build, the batched build plus what live players need (``Arena.start``)."""

from __future__ import annotations

import numpy as np

from bdpd_jax.config.game import ArenaConfig, PlayerConfig
from bdpd_jax.host.live.players import LivePlayerConfig
from bdpd_jax.host.live.programs import EXTERNAL
from bdpd_jax.kernels.game import Game
from bdpd_jax.kernels.params import Params
from bdpd_jax.prepare.prepared import LiveOptions, prepare


def kernel_config(config: ArenaConfig, specs: list[LivePlayerConfig]) -> ArenaConfig:
    """The kernels' view: builtins as configured, external players on the placeholder."""
    players = []
    for s in specs:
        if s.external:
            players.append(
                PlayerConfig(
                    strategy=EXTERNAL, name=s.name, private_resource=s.private_resource, active_from=s.active_from
                )
            )
        else:
            players.append(
                PlayerConfig(
                    strategy=s.strategy,
                    name=s.name,
                    private_resource=s.private_resource,
                    active_from=s.active_from,
                    intensity=s.intensity,
                    reduction_factor=s.reduction_factor,
                    talk=s.talk,
                )
            )
    data = {k: getattr(config, k) for k in ArenaConfig.model_fields if k != "players"}
    return ArenaConfig.model_validate({**data, "players": players})


def live_game(
    kcfg: ArenaConfig,
    external: np.ndarray,
    *,
    uses_tools: bool,
    pact_slots: int,
    generator: str,
    perturbable: bool,
    max_turns: int,
) -> tuple[Game, Params]:
    """(game, params) of a live arena: the one preparation (``bdpd_jax.prepare``) with the
    live options passed in. ``external``: bool[N], the players asked from outside;
    ``uses_tools``: some external player talks (the pact table takes proposals at any turn).
    With no external talker this is exactly the batched build."""
    live = LiveOptions(
        external=tuple(bool(x) for x in np.asarray(external, bool)),
        uses_tools=uses_tools,
        pact_slots=int(pact_slots),
        perturbable=perturbable,
        max_turns=int(max_turns),
    )
    prep = prepare(kcfg, generator=generator, live=live)
    return prep.game, prep.params


__all__ = ["kernel_config", "live_game"]
