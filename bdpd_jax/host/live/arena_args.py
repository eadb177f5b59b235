"""A live arena's inputs, apart from the arena so that its module holds the lifecycle and the
turn: its creation arguments (``Arena(...)``) and each joining player checked (ValueError
names the bad argument), and its one preparation at start: the kernel config (external
players on the placeholder policy) prepared with the live options, the ``PreparedRun`` the
arena's run holds for its life and a fork starts from."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bdpd_jax.config.base import wire_name
from bdpd_jax.config.game import ArenaConfig, PlayerConfig
from bdpd_jax.config.limits import ARENA_INDEX_LIMIT, MAX_PACT_SLOTS, check_int, check_magnitudes, check_run_args
from bdpd_jax.host.live.operator import Operator
from bdpd_jax.host.live.players import LivePlayerConfig, player_timeout_ms
from bdpd_jax.host.live.programs import EXTERNAL
from bdpd_jax.prepare.prepared import LiveOptions, PreparedRun, prepare


def arena_inputs(
    config: ArenaConfig | dict | str | Path,
    *,
    seed: int,
    arena_index: int,
    pact_slots: int,
    turns: int | None,
    keep_records: int | None,
) -> tuple[ArenaConfig, list[LivePlayerConfig]]:
    """``(config without its players, the config's players as joins)``, the other arguments
    checked. The players may be only some of those who will join: they are validated apart."""
    if isinstance(config, ArenaConfig):
        cfg, config_players = config, list(config.players or [])
    else:
        raw = ArenaConfig.load(config).model_dump() if not isinstance(config, dict) else dict(config)
        config_players = [PlayerConfig.model_validate(p) for p in (raw.pop("players", None) or [])]
        cfg = ArenaConfig.model_validate(raw)
    m = cfg.model  # players still to join: refuse at create what no player count could start
    for i, plugin in enumerate(cfg.plugins):
        plugin.check_count(max(m.min_players, len(config_players)), m.max_players, f"plugins[{i}]")
    check_run_args(seed=seed, turns=turns)  # the same rule as a batch run's
    check_int(arena_index, "arena_index", 0, ARENA_INDEX_LIMIT - 1)
    check_int(pact_slots, "pactSlots", 1, MAX_PACT_SLOTS)  # bounds: bdpd_jax/config/limits.py
    if keep_records is not None and (
        isinstance(keep_records, bool) or not isinstance(keep_records, int) or keep_records < 2
    ):
        raise ValueError(f"keep_records: must be an integer >= 2 or None, got {keep_records!r}")
    return cfg, [_joining_builtin(i, p) for i, p in enumerate(config_players)]


def joining_player(
    spec: LivePlayerConfig | dict, joined: list[LivePlayerConfig], config: ArenaConfig, operator: Operator
) -> LivePlayerConfig:
    """A joining player's validated spec (named ``p<k>`` when unnamed); ValueError names the
    bad field: a duplicate name, a full arena, credentials or a timeout the operator refuses."""
    if not isinstance(spec, LivePlayerConfig):
        spec = LivePlayerConfig.model_validate(spec)
    numbers = ("private_resource", "intensity", "reduction_factor", "fallback_harvest")
    check_magnitudes(
        {wire_name(LivePlayerConfig, k): getattr(spec, k) for k in numbers if getattr(spec, k) is not None}, ""
    )
    if spec.name is None:
        spec = spec.model_copy(update={"name": f"p{len(joined)}"})
    if spec.name in [s.name for s in joined]:
        raise ValueError(f"name: player {spec.name!r} already joined")
    if len(joined) >= config.model.max_players:
        raise ValueError(f"players: the arena is full (maxPlayers={config.model.max_players})")
    if spec.external:
        operator.check_player(spec)
        player_timeout_ms(spec, float(config.agent_timeout))
    return spec


#: what the kernels read of every player's spec; a builtin's own settings besides
KERNEL_FIELDS = ("name", "private_resource", "active_from")
BUILTIN_FIELDS = ("intensity", "reduction_factor", "talk")


def kernel_config(config: ArenaConfig, specs: list[LivePlayerConfig]) -> ArenaConfig:
    """The kernels' view: builtins as configured, external players on the placeholder."""
    players = [
        PlayerConfig(
            strategy=EXTERNAL if s.external else s.strategy,
            **{k: getattr(s, k) for k in KERNEL_FIELDS + (() if s.external else BUILTIN_FIELDS)},
        )
        for s in specs
    ]
    data = {k: getattr(config, k) for k in ArenaConfig.model_fields if k != "players"}
    return ArenaConfig.model_validate({**data, "players": players})


def prepare_live(
    kcfg: ArenaConfig,
    external: np.ndarray,
    *,
    uses_tools: bool,
    pact_slots: int,
    generator: str,
    perturbable: bool,
    max_turns: int,
) -> PreparedRun:
    """A live arena's one preparation (``bdpd_jax.prepare``) with the live options passed in.
    ``external``: bool[N], the players asked from outside; ``uses_tools``: some external
    player talks (the pact table takes proposals at any turn). With no external talker this
    is exactly the batched build."""
    live = LiveOptions(
        external=tuple(bool(x) for x in np.asarray(external, bool)),
        uses_tools=uses_tools,
        pact_slots=int(pact_slots),
        perturbable=perturbable,
        max_turns=int(max_turns),
    )
    return prepare(kcfg, generator=generator, live=live)


def _joining_builtin(i: int, p: PlayerConfig) -> LivePlayerConfig:
    """A config player as the join of a built-in (a live arena plays named strategies only)."""
    if not isinstance(p.strategy, str):
        raise ValueError(f"players[{i}].strategy: a live arena needs built-in strategy names, got {p.strategy!r}")
    return LivePlayerConfig(
        agent_type="builtin",
        name=p.name or f"p{i}",
        private_resource=p.private_resource,
        active_from=p.active_from,
        strategy=p.strategy,
        intensity=p.intensity,
        reduction_factor=p.reduction_factor,
        talk=None if p.talk is None else p.talk.model_dump(mode="json"),
    )


__all__ = ["arena_inputs", "joining_player", "kernel_config", "prepare_live"]
