"""From a validated ArenaConfig to the kernels' static Game and dynamic Params."""

from __future__ import annotations

import dataclasses
from typing import cast

import jax
import jax.numpy as jnp
import numpy as np

from ..config.game import ArenaConfig
from ..config.perturbations import arena_specs, override_strategies
from ..config.plugins import perturbation_types
from ..config.policy_check import check_policy_outputs
from ..kernels.engines import get_engine
from ..kernels.game import Game
from ..kernels.outcomes import METRIC_PLAYERS
from ..kernels.params import OBS_VARS, OWN_VARS, RESOLUTIONS, ObsParams, Params, PlayerParams, farr
from ..kernels.policies import BUILTINS, Policy
from ..kernels.rng import Generator
from ..kernels.sustainability import THRESHOLD_PLAYERS
from .governance import governance as governance_layer
from .governance import sanction_specs, uses_governance
from .perturbations import compile_specs, perturb_layer
from .plugins import plugin_layer


def policies_of(config: ArenaConfig, extra: tuple = ()) -> tuple[tuple, list[int]]:
    """Distinct strategies in play (in order of first use) and each player's index into them."""
    pols: list = []
    index: list[int] = []
    for p in config.require_players():
        pol = BUILTINS[p.strategy] if isinstance(p.strategy, str) else p.strategy
        if pol not in pols:
            pols.append(pol)
        index.append(pols.index(pol))
    for pol in extra:
        pol = BUILTINS[pol] if isinstance(pol, str) else pol
        if pol not in pols:
            pols.append(pol)
    return tuple(pols), index


def obs_params(config: ArenaConfig) -> ObsParams:
    """Listed variables as configured; unlisted ones hidden, except the player's own."""
    vis, noise = [], []
    for name in OBS_VARS:
        spec = config.observability.get(name)
        vis.append(name in OWN_VARS if spec is None else spec.visible)
        noise.append(0.0 if spec is None else spec.noise)
    return ObsParams(visible=cast(jax.Array, np.asarray(vis, bool)), noise=farr(noise))  # numpy leaf, as farr


def resolution_of(config: ArenaConfig) -> tuple:
    """(variable, code) of the variables read at a coarser resolution than exact (static)."""
    return tuple(
        (n, RESOLUTIONS.index(s.resolution)) for n, s in config.observability.items() if s.resolution != "exact"
    )


def sustainable_yield(config: ArenaConfig) -> float:
    """f0: the engine's sustainable per-turn total harvest, NaN when it has no closed form
    (the engine's own rule, read from the registry when called)."""
    return float(get_engine(config.model.engine_mode).sustainable_yield(config.model.engine))


def build(
    config: ArenaConfig,
    *,
    generator: str = "hash",
    extra_policies: tuple = (),
    governance: dict | None = None,
    perturb: dict | None = None,
    external: tuple[bool, ...] | None = None,
) -> tuple[Game, Params]:
    """The static game and the params pytree (no batch axis) of one config.

    governance: static shapes of the governance layer (``pact_slots``, ``ladder_width``,
    ``n_specs``) and a live arena's ``registry`` flag, e.g. a sweep's largest shapes, so every
    cell shares one compiled program (prepare/governance.py).
    perturb: static shape of the perturbation layer (``n_slots``, ``types``, ``perturbable``:
    include every type the engine supports, for owner-fired perturbations), see prepare/perturbations.py.
    external: bool[N], a live arena's players asked from outside (their pact answers are theirs).
    """
    players = config.require_players()
    specs = arena_specs(config)
    extras = tuple(extra_policies) + override_strategies(specs)
    pols, index = policies_of(config, extras)
    for k, pol in enumerate(pols):  # user policies: traced abstractly here, not inside a jitted turn
        if isinstance(pol, Policy):
            who = [i for i, j in enumerate(index) if j == k]
            where = f"players[{who[0]}].strategy" if who else "perturbations[].payload.strategy"
            check_policy_outputs(pol, len(players), where)
    # a player's candidates: its own strategy and every strategy it may be switched to
    switch = {pols.index(BUILTINS[x] if isinstance(x, str) else x) for x in extras}
    candidates = tuple(tuple(sorted({i} | switch)) for i in index)
    model = config.model
    engine = get_engine(model.engine_mode)
    if generator not in ("hash", "threefry"):
        raise ValueError(f"generator: unknown {generator!r}; known: ['hash', 'threefry']")
    gen = cast(Generator, generator)  # checked above
    noisy = tuple(
        n for n in OBS_VARS if n in config.observability and "noise" in config.observability[n].model_fields_set
    )
    game = Game(
        engine=engine,
        n_players=len(players),
        policies=pols,
        scheduler=model.scheduler,
        generator=gen,
        noisy=noisy,
        resolution=resolution_of(config),
        candidates=candidates,
    )
    params = Params(
        max_turns=cast(jax.Array, np.asarray(model.max_turns, np.int32)),
        whole_units=cast(jax.Array, np.asarray(bool(model.whole_units))),
        threshold_players=cast(jax.Array, np.asarray(THRESHOLD_PLAYERS.index(model.threshold_players), np.int32)),
        metric_players=cast(jax.Array, np.asarray(METRIC_PLAYERS.index(model.metric_players), np.int32)),
        survival_horizon=cast(jax.Array, np.asarray(model.survival_horizon or 0, np.int32)),
        engine=engine.params_from_model(model.engine),
        obs=obs_params(config),
        players=PlayerParams(
            strategy=cast(jax.Array, np.asarray(index, np.int32)),
            intensity=farr([p.intensity for p in players]),
            reduction_factor=farr([p.reduction_factor for p in players]),
            wealth0=farr([p.private_resource for p in players]),
            active_from=cast(jax.Array, np.asarray([p.active_from for p in players], np.int32)),
        ),
        extra={},
    )
    pk = dict(perturb or {})
    fired_by_plugins = perturbation_types(config)  # a regulator's regen_set mandate (kernels/governance_agent.py)
    if fired_by_plugins:
        pk["types"] = tuple(pk.get("types") or ()) + fired_by_plugins
    perturb_lyr = perturb_layer(config, **pk, specs=specs)
    if perturb_lyr is not None:  # Table A.1 perturbations (kernels/perturb.py)
        slots = compile_specs(specs, config, pols, perturb_lyr.n_slots)
        game = dataclasses.replace(game, layers=game.layers + (perturb_lyr,))
        params = dataclasses.replace(params, extra={**params.extra, perturb_lyr.name: slots})
    sanctions = sanction_specs(config)
    if governance is not None or uses_governance(config, sanctions):
        layer, gov = governance_layer(config, **(governance or {}), external=external, specs=sanctions)
        game = dataclasses.replace(game, layers=game.layers + (layer,))
        params = dataclasses.replace(params, extra={**params.extra, layer.name: gov})
    plug = plugin_layer(config)
    if plug is not None:  # governance plugins (kernels/plugins.py), after the automatic sanctions
        game = dataclasses.replace(game, layers=game.layers + (plug[0],))
        params = dataclasses.replace(params, extra={**params.extra, plug[0].name: plug[1]})
    return game, params


def broadcast_batch(params, b: int):
    """Give every leaf a trailing batch axis of size b (the same values for every arena)."""
    return jax.tree_util.tree_map(lambda x: jnp.broadcast_to(jnp.asarray(x)[..., None], np.shape(x) + (b,)), params)
