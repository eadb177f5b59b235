"""One preparation of a config: ``prepare(config) -> PreparedRun``, shared by ``simulate``,
``sweep`` (each point) and the live host (with its live-only options passed in).

A PreparedRun holds the validated config and everything derived from it that a run reads,
each computed once: the static Game, the Params, the players' labels, the perturbation spec
ids, the sanction specs, max_yield (the engine's sustainable yield) and the run's metadata.

``prepare`` called again with a config already seen (same content: a dict, JSON, a file or
an ArenaConfig) returns the same PreparedRun instead of validating and building it again:
at B = 16384, T = 30 the kernel runs in ~10 ms, and validation + build + metadata cost
~2 ms a call. The key is a SHA-1 of the config's content (JSON, sorted keys); a Python
policy object (a player's strategy that is not a name) enters it by identity, and is kept
alive, so no other object can take its identity. A live preparation is never cached (each
arena builds once, at start).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np
from pydantic_core import PydanticSerializationError

from ..config.files import MAX_CONFIG_BYTES, read_text
from ..config.game import ArenaConfig
from ..config.governance import needed_slots
from ..config.perturbations import arena_specs
from ..kernels.game import Game
from ..kernels.params import Params
from .game import build, sustainable_yield
from .governance import sanction_specs

MAX_ENTRIES = 32


@dataclass(frozen=True)
class LiveOptions:
    """What only a live arena's preparation needs (bdpd_jax/host/live/arena_args.py).

    external: bool[N], the players asked from outside (their answers to proposals come from
        their ``accept_pact`` calls, never from the kernel's scripted rule);
    uses_tools: some external player talks: the pact table takes proposals at any turn and
        has at least ``pact_slots`` slots;
    perturbable: compile every perturbation type the engine supports (owner-fired ones);
    max_turns: the turns the arena plays (default ``model.maxTurns``).
    """

    external: tuple[bool, ...]
    uses_tools: bool = False
    pact_slots: int = 1
    perturbable: bool = False
    max_turns: int | None = None


@dataclass(frozen=True)
class PreparedRun:
    """A validated config and everything derived from it that a run reads (never mutated)."""

    config: ArenaConfig
    game: Game
    params: Params  # no batch axis; ``max_turns`` as configured (or the live option)
    labels: tuple[str, ...]  # each player's strategy name
    names: tuple[str, ...]  # each compiled policy's name
    spec_ids: tuple[str, ...]  # the Table A.1 perturbation specs' ids, in slot order
    sanctions: tuple = ()  # the sanction specs the governance layer compiled
    max_yield: float = float("nan")  # the engine's maximum sustainable yield (the project's ``efficiency``)
    meta_json: str = "{}"  # the config and players for Results.meta (loaded fresh per run)
    generator: str = "hash"
    live: LiveOptions | None = None
    placed: dict[int, Params] = field(default_factory=dict, compare=False, repr=False)  # params_on_device's

    @property
    def cfg(self) -> ArenaConfig:
        """The validated config (short name)."""
        return self.config

    @property
    def n_players(self) -> int:
        return self.game.n_players

    def meta(self, batch: bool = True) -> dict[str, Any]:
        """A fresh copy of the run's metadata (config and players); a batch run's (``batch``:
        simulate, fork, sweeps) also records its engine's ``metric_family``, so a reader of the
        folder (``bdpd show``) needs no engine and starts no jax. A live arena's meta is on the
        wire (camelCase keys) and asks the engine instead."""
        meta = json.loads(self.meta_json)
        if batch:
            meta["metric_family"] = list(self.game.engine.metric_family)
        return meta

    def params_for(self, n_turns: int) -> Params:
        """The params with ``max_turns = n_turns``: ``params`` itself when that is its count
        (no new pytree: building one costs more than a small run's host work), else a copy."""
        if int(n_turns) == int(self.params.max_turns):
            return self.params
        return self.params.with_max_turns(np.asarray(int(n_turns), np.int32))

    def params_on_device(self, n_turns: int) -> Params:
        """``params_for(n_turns)`` on the default device, placed once: a run's call then moves
        no params (their transfer was ~1 ms of ``simulate``'s host work at B = 16384, T = 30)."""
        placed = self.placed.get(int(n_turns))
        if placed is None:
            placed = self.placed[int(n_turns)] = jax.device_put(self.params_for(n_turns))
        return placed


_CACHE: OrderedDict[tuple, PreparedRun] = OrderedDict()
_PINNED: dict[int, Any] = {}  # objects keyed by identity: kept alive so no other takes their id


def _by_name(v: Any) -> Any:
    """How the run's meta shows a value JSON has no form for (a Policy in a perturbation)."""
    return getattr(v, "name", None) or repr(v)


def _token(obj: Any) -> str:
    _PINNED[id(obj)] = obj
    return f"<{type(obj).__qualname__}@{id(obj):x}>"


def content_key(source: Any) -> str:
    """SHA-1 of a config source's content (a file by its text). An ArenaConfig is serialised
    by pydantic's own JSON writer (its field order is the model's: the same content, the
    same text); one holding a Python policy object by sorted JSON with the object's token."""
    if isinstance(source, ArenaConfig):
        try:
            text = source.model_dump_json()
        except PydanticSerializationError:  # a Policy object: keyed by identity
            text = json.dumps(source.model_dump(mode="python"), sort_keys=True, default=_token)
    elif isinstance(source, dict):
        text = json.dumps(source, sort_keys=True, default=_token)
    elif isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith("{")):
        path = Path(source)
        text = read_text(path, MAX_CONFIG_BYTES, "config") if path.is_file() else f"<missing {path}>"  # bounded
    else:
        text = str(source)
    return hashlib.sha1(f"{type(source).__name__}:{text}".encode()).hexdigest()


def prepare(
    config: ArenaConfig | dict | str | Path,
    *,
    generator: str = "hash",
    live: LiveOptions | None = None,
    extra_policies: tuple = (),
    governance: dict | None = None,
) -> PreparedRun:
    """The PreparedRun of a config source: validated and built on first sight, then reused.

    generator: ``"hash"`` (default) or ``"threefry"``; live: a live arena's options (never
    cached); extra_policies: strategies compiled in besides the players' (names or
    Policies: a strategy table may switch to them, one program for all tables); governance:
    the governance layer's static shapes (``pact_slots``, ``ladder_width``, ``n_specs``),
    e.g. the largest of several configs run as one program. Raises ValueError naming the
    field and value of any bad input.
    """
    options = {"extra_policies": tuple(extra_policies), "governance": governance}
    if live is not None:
        return _prepare(config, generator, live, options)
    try:
        key = (content_key(config), generator, json.dumps(options, sort_keys=True, default=_token))
    except (TypeError, ValueError):  # content that JSON cannot order: no caching
        return _prepare(config, generator, None, options)
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    prep = _prepare(config, generator, None, options)
    _CACHE[key] = prep
    while len(_CACHE) > MAX_ENTRIES:
        _CACHE.popitem(last=False)
    return prep


def _prepare(source: Any, generator: str, live: LiveOptions | None, options: dict | None = None) -> PreparedRun:
    cfg = ArenaConfig.load(source)
    if isinstance(source, ArenaConfig):  # the caller's object may change later: keep a copy
        cfg = cfg.model_copy(deep=True)
    players = cfg.require_players()
    kw: dict[str, Any] = {"generator": generator}
    if options and options.get("extra_policies"):
        kw["extra_policies"] = options["extra_policies"]
    if options and options.get("governance") is not None:
        kw["governance"] = dict(options["governance"])
    if live is not None:
        if len(live.external) != len(players):
            raise ValueError(f"live.external: {len(live.external)} flags for {len(players)} players")
        if live.uses_tools:
            kw["governance"] = {
                **kw.get("governance", {}),
                "registry": True,
                "pact_slots": max(int(live.pact_slots), needed_slots(cfg)),
            }
        if live.perturbable:
            kw["perturb"] = {"perturbable": True}
        if any(live.external):
            kw["external"] = tuple(bool(x) for x in live.external)
    game, params = build(cfg, **kw)
    if live is not None and live.max_turns is not None:
        params = params.with_max_turns(np.asarray(int(live.max_turns), np.int32))
    meta = {
        "config": cfg.model_dump(mode="json", exclude={"players"}, fallback=_by_name),  # a Policy by its name
        "players": [{**p.model_dump(exclude={"strategy"}), "strategy": p.strategy_name} for p in players],
    }
    return PreparedRun(
        config=cfg,
        game=game,
        params=params,
        labels=tuple(p.strategy_name for p in players),
        names=tuple(p.name for p in game.policies),
        spec_ids=tuple(s.id for s in arena_specs(cfg)),
        sanctions=tuple(sanction_specs(cfg)),
        max_yield=sustainable_yield(cfg),
        meta_json=json.dumps(meta, default=str),
        generator=generator,
        live=live,
    )
