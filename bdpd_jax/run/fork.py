"""``fork``: "what if" forks of a live arena, its exact state at a turn continued as a batch.

``fork(arena_or_folder, turn=t, replicates=N, changes={...}, seed=s)`` takes the live arena's
kernel state after turn ``t`` (an ``Arena`` at its current turn as it is; an earlier turn,
or a folder, rebuilt by replaying its records through the kernels: ``host.live.replay``), applies
the changes (config paths as a sweep names them, and ``perturb``: specs fired at the fork's
turn), puts built-in stand-ins in the remote players' seats, and plays the turns left for N
arenas in ONE compiled program (``kernels.rollout.run_turns``). It returns a ``Results`` like
``simulate``'s, whose rows carry ``arena`` (the replicate) and ``turn`` (the live game's).

Randomness is counter-based: replicate ``r`` plays with ``rng.arena_key(seed, arena_index +
r)`` from turn ``t + 1`` on (the live arena's seed and index by default), so replicate 0 of a
fork without changes is the live arena's own continuation, bit for bit where its players
are built-ins. Rules and choices: docs/semantics/live/arena.md, "Forks".
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pandas as pd

from ..config.game import ArenaConfig
from ..config.limits import check_run_args, check_run_size
from ..kernels.game import Game
from ..kernels.policies import BUILTINS
from ..kernels.rollout import run_turns
from ..kernels.stored import restored
from ..prepare.game import broadcast_batch
from ..prepare.paths import apply_values, config_base
from ..prepare.perturbations import compile_spec
from ..prepare.prepared import LiveOptions, PreparedRun, prepare
from ..results.frames import Frames, Results, summary_frame
from ..results.stream import flatten_record
from .fork_state import REPEAT_LAST, carried_state, fire
from .runner import TRACES, key_words, keys_of, to_numpy
from .simulate import FLOAT, final_numbers, game_layer_names, record_frames

#: the stand-in rule when none is given: a remote player asks what it asked on the fork's turn
DEFAULT_STANDIN = "last"
#: the change key that fires perturbation specs at the fork's turn
PERTURB_KEY = "perturb"
#: the fan's quantiles of a turns-frame column per turn
FAN_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


@dataclass(frozen=True)
class Origin:
    """What a fork starts from: the live arena's run at turn ``turn``."""

    arena: Any  # the Arena (the live one, or its replay to ``turn``)
    turn: int
    arena_id: str


def origin(arena_or_folder: Any, turn: int | None) -> Origin:
    """The live arena's state at ``turn`` (default: its last turn played): an ``Arena`` at
    its current turn as it is, otherwise replayed from its folder (``host.live.replay``)."""
    from ..host.live.arena import Arena
    from ..host.live.replay import load, replay

    if isinstance(arena_or_folder, Arena):
        a = arena_or_folder
        if a.status == "waiting":
            raise ValueError("arena: it has not started; fork a running or closed arena")
        played, folder = a.turn, a.out_dir
    else:
        folder = Path(arena_or_folder)
        a, played = None, len(load(folder)[1])
    t = played if turn is None else turn
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= int(t) <= played:
        raise ValueError(f"turn: must be an integer in [0, {played}] (the turns played), got {turn!r}")
    t = int(t)
    if a is None or t != played:
        if folder is None:
            raise ValueError(f"turn: {t} is not the arena's current turn and it keeps no folder to replay")
        a = replay(folder, turns=t, verify=False)
    return Origin(a, t, a.arena_id)


def _standins(specs: list[Any], standin: str | dict[str, str]) -> dict[str, str]:
    """Each remote player's stand-in: ``"last"`` or a built-in strategy name."""
    remote = [s.name for s in specs if s.external]
    given = standin if isinstance(standin, dict) else dict.fromkeys(remote, standin)
    extra = sorted(set(given) - set(remote))
    if extra:
        raise ValueError(f"standin: {extra} are not remote players of this arena; remote: {remote}")
    out = {}
    for name in remote:
        rule = given.get(name, DEFAULT_STANDIN)
        if rule != "last" and rule not in BUILTINS:
            raise ValueError(f"standin.{name}: 'last' or a built-in strategy, got {rule!r}; known: {sorted(BUILTINS)}")
        out[name] = rule
    return out


def fork_config(a: Any, changes: dict[str, Any], standins: dict[str, str]) -> tuple[ArenaConfig, list[Any]]:
    """(the fork's kernel config, the specs to fire at its turn): the live arena's kernel
    config with stand-ins in the remote seats and the changes applied."""
    kcfg = a.kernel_config()
    players = list(kcfg.players)
    for i, s in enumerate(a.specs):
        if s.external:
            rule = standins[s.name]
            players[i] = players[i].model_copy(update={"strategy": REPEAT_LAST if rule == "last" else rule})
    kcfg = kcfg.model_copy(update={"players": players})
    if not isinstance(changes, dict):
        raise ValueError(f"changes: must be an object of config paths and values, got {type(changes).__name__}")
    fire_specs = changes.get(PERTURB_KEY, [])
    fire_specs = fire_specs if isinstance(fire_specs, list) else [fire_specs]
    paths = {k: v for k, v in changes.items() if k != PERTURB_KEY}
    if paths:
        try:
            kcfg = apply_values(config_base(kcfg), list(paths), list(paths.values()))
        except ValueError as e:
            raise ValueError(f"changes: {str(e).removeprefix('sweep: ')}") from None
    return kcfg, fire_specs


def _fork_prepared(live_run: PreparedRun, kcfg: ArenaConfig, fires: bool, max_turns: int) -> PreparedRun:
    """The fork's preparation: the live arena's own PreparedRun when the fork changes nothing of
    it (no remote seat, no change, no new perturbation type, the same last turn), else the live
    arena's options with every seat built in, ``fires`` owner-fired types compiled in and
    ``max_turns``."""
    base = live_run.live or LiveOptions(external=(False,) * live_run.n_players)
    live = dataclasses.replace(
        base,
        external=(False,) * live_run.n_players,
        perturbable=base.perturbable or fires,
        max_turns=max_turns,
    )
    if live == live_run.live and kcfg == live_run.config:
        return live_run
    return prepare(kcfg, generator=live_run.generator, live=live)


def _program(game: Game, n_turns: int) -> Any:
    return _compiled(game, int(n_turns))


def _counted(game: Game, n_turns: int, seed, arenas, state, params, max_yield):
    TRACES["run"] += 1
    b = arenas.shape[0]
    pb = broadcast_batch(params, b)
    st, rec = run_turns(game, n_turns, True, keys_of(seed, arenas), broadcast_batch(state, b), pb)
    return final_numbers(game, st, pb, max_yield), rec


@functools.lru_cache(maxsize=16)
def _compiled(game: Game, n_turns: int) -> Any:
    """The fork's one program: keys, the state and params broadcast to the batch, the turns
    with history, the final numbers."""
    return jax.jit(functools.partial(_counted, game, n_turns))


def fork(
    arena_or_folder: Any,
    *,
    turn: int | None = None,
    replicates: int = 1,
    changes: dict[str, Any] | None = None,
    seed: int | None = None,
    turns: int | None = None,
    standin: str | dict[str, str] = DEFAULT_STANDIN,
) -> Results:
    """Continue a live arena from ``turn`` as ``replicates`` arenas; returns their Results.

    Args:
        arena_or_folder: a started ``bdpd_jax.host.live.arena.Arena`` or its folder (meta.json,
            turns.jsonl).
        turn: the turn to fork after (default: the last played); 0 forks the start.
        replicates: arenas in the batch; replicate ``r`` draws from (seed, arena_index + r).
        changes: config paths (``"model.regenRate"``, ``"players[bob].strategy"``,
            ``"pacts"``) and their values, in force from the fork's turn on; and
            ``"perturb"``: a perturbation spec (or a list) fired at the fork's turn.
        seed: the forks' seed (default: the live arena's, so replicate 0 is its own key).
        turns: turns to play (default: to the live arena's last turn).
        standin: who plays a remote (code, HTTP, LLM) player's seat: ``"last"`` (asks what
            it asked on the fork's turn, every turn) or a built-in strategy name; one rule
            for all or ``{player name: rule}``.
    Raises:
        ValueError naming the field and value of any bad input, before anything runs.
    """
    check_run_args(replicates=replicates, seed=0 if seed is None else seed, turns=turns)
    o = origin(arena_or_folder, turn)
    a, t = o.arena, o.turn
    seed = a.seed if seed is None else seed
    n_turns = int(a.max_turns) - t if turns is None else turns
    if isinstance(n_turns, bool) or not isinstance(n_turns, (int, np.integer)) or n_turns < 1:
        raise ValueError(f"turns: the fork plays at least 1 turn after turn {t}, got {n_turns!r}")
    n_turns, replicates = int(n_turns), int(replicates)
    standins = _standins(a.specs, standin)
    kcfg, fire_specs = fork_config(a, changes or {}, standins)
    check_run_size(replicates, n_turns, len(a.specs), True)
    prep = _fork_prepared(a.prepared, kcfg, bool(fire_specs), t + n_turns)
    game, params = prep.game, prep.params
    standin_mask = np.asarray([s.external for s in a.specs], bool)
    state = carried_state(a.game, a.params, a.state, game, params, standin_mask, _last_requests(a, t))
    for spec in fire_specs:
        state = fire(game, state, compile_spec(spec, kcfg, game.policies), params)
    arenas = np.arange(replicates, dtype=np.int64) + a.arena_index
    final, rec = to_numpy(
        _program(game, n_turns)(*key_words(seed, arenas), state, params, np.asarray(prep.max_yield, FLOAT))
    )
    rec = restored(game, rec, np.asarray(params.players.strategy))
    index = np.arange(replicates, dtype=np.int64)
    frames = record_frames(prep, game_layer_names(game), flatten_record(rec), index)
    meta = {
        **prep.meta(),
        "n_arenas": replicates,
        "seed": int(seed),
        "turns": n_turns,
        "generator": prep.generator,
        "fork": {
            "arenaId": o.arena_id,
            "turn": t,
            "arenaIndex": a.arena_index,
            "changes": json.loads(json.dumps(changes or {}, default=str)),
            "standin": standins,
        },
    }
    history = {k: frames.pop(k) for k in ("turns", "players")}
    return Results(
        summary_frame(final, index, list(prep.labels)),
        None,
        None,
        meta,
        Frames(builders=frames),
        Frames(builders=history),
    )


def _last_requests(a: Any, t: int) -> np.ndarray:
    """float[N]: each player's request on turn ``t`` (0 before the first turn)."""
    out = np.zeros(len(a.specs))
    recs = [r for r in a.records if r.get("turn") == t]
    if recs:
        for i, d in enumerate(recs[-1]["decisions"]):
            out[i] = float(d.get("harvest", d.get("requested")) or 0.0)
    return out


def fan(res: Results, column: str = "stock") -> pd.DataFrame:
    """Per turn, the quantiles ``FAN_QUANTILES`` of a turns-frame column over the fork's
    arenas (``q05``, ``q25``, ``median``, ``q75``, ``q95``) and their count ``n``."""
    df = res.turns
    if column not in df.columns:
        raise ValueError(f"column: {column!r} is not a turns-frame column; known: {list(df.columns)}")
    g = df.groupby("turn")[column]
    out = g.quantile(list(FAN_QUANTILES)).unstack()
    out.columns = ["q05", "q25", "median", "q75", "q95"]
    out["n"] = g.count()
    return out.reset_index()


__all__ = ["fork", "fan", "origin", "fork_config", "DEFAULT_STANDIN", "PERTURB_KEY"]
