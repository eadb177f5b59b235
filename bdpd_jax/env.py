"""``CommonsEnv``: one arena as a JaxMARL multi-agent environment, for learned players.

The env runs the kernels' own turn, cut where the live host cuts it
(bdpd_jax/host/live/programs.py): ``kernels.turn.decide_phase`` (start-of-turn writes, begin hooks:
perturbations), the observation of ``kernels.observe``, then ``kernels.turn.step_phase`` with
the learned players' requests as ``kernels.turn.External`` actions, so every rule of the
config (schedulers, pacts, ladders, plugins, perturbations, Seneca) applies unchanged and
built-in players fill the other slots (mixed tables). Nothing of a rule is restated here.

Conventions (JaxMARL's ``MultiAgentEnv``, whose ``step`` auto-resets): ``agents`` are
``agent_<slot>`` for the learned slots; ``reset(key) -> (obs, state)``, ``step(key, state,
actions) -> (obs, state, rewards, dones, infos)``, dicts keyed by agent, ``dones["__all__"]``
when the arena has ended (collapse or ``maxTurns``). Randomness is the arena's own
counter-based streams, keyed by the reset key (a raw ``uint32[2]`` key is used as the arena
key itself: ``CommonsEnv.arena_key(seed, i)`` is arena i of ``simulate(seed=seed)``); the
step key only seeds the auto-reset. Written for one arena: ``jax.vmap`` over keys and states.
See docs/semantics/game.md, "Learned players".
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import sys
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any, cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .config.game import ArenaConfig
from .config.limits import short_repr
from .host.live.programs import EXTERNAL
from .kernels import rng
from .kernels.actions import Actions
from .kernels.layers import effective_params
from .kernels.observe import capacity, observe
from .kernels.params import ENV_VARS, PEER_VARS, PLAYER_VARS, Params
from .kernels.policies import BUILTINS
from .kernels.state import ArenaState, TurnRecord, still_playing
from .kernels.turn import External, decide_phase, prepare, step_phase
from .prepare.game import build
from .prepare.governance import governance_shapes


@contextlib.contextmanager
def _quiet_jaxmarl_import() -> Iterator[None]:
    """JaxMARL's package import prints its search for optional submoduled environments
    ("Importing submoduled environments...") and, around its brax import, sets ``sys.stdout``
    and ``sys.stderr`` back to the interpreter's originals (losing a notebook's or a test's
    streams). For this import only: its prints are swallowed and the caller's streams kept."""
    saved = sys.stdout, sys.stderr, sys.__stdout__
    sink = io.StringIO()
    sys.stdout = sink
    # what JaxMARL restores, so its later prints land here too (setattr: typeshed marks it Final)
    setattr(sys, "__stdout__", sink)  # noqa: B010
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved[:2]
        setattr(sys, "__stdout__", saved[2])  # noqa: B010


try:  # the learn extra: one line saying what to install, not a traceback into jaxmarl
    with _quiet_jaxmarl_import():
        from jaxmarl.environments import spaces
        from jaxmarl.environments.multi_agent_env import MultiAgentEnv
except ImportError as exc:
    raise ImportError(
        f"bdpd_jax.env needs the 'learn' extra ({exc.name or 'jaxmarl'} is missing): pip install -e '.[learn]'",
        name=exc.name,
    ) from None


ACTIONS = ("continuous", "discrete")
REWARDS = ("harvest", "wealth")
# A bound on the discrete action count a caller may ask for (the policy head's width).
MAX_ACTIONS = 1024
# the range of an integer action (JAX's default int)
INT32 = (-(2**31), 2**31 - 1)


class EnvState(eqx.Module):
    """One arena between two turns, as the learned players see it."""

    arena: ArenaState  # after the coming turn's decide phase (begin hooks applied)
    begun: dict  # the coming turn's begin records (layer name -> record)
    ahead: dict  # the coming turn's observation noise draws (kernels.turn.prepare)
    key: jax.Array  # uint32[2], the arena key every draw is counted from
    params: Params  # the arena's numbers (a pytree leaf each: vmap over them to sweep)
    done: jax.Array  # bool[], the arena has ended
    step: jax.Array  # int32[], turns played


def _slots(learned: Any, n: int) -> tuple[int, ...]:
    if learned is None:
        return tuple(range(n))
    slots = tuple(learned) if isinstance(learned, Sequence) and not isinstance(learned, str) else None
    if (
        not slots
        or any(isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < n for s in slots)
        or len(set(slots)) != len(slots)
    ):
        raise ValueError(f"learned: distinct player indices in [0, {n}), at least one, got {learned!r}")
    return tuple(sorted(slots))


def _subset(learned: Any, slots: tuple[int, ...]) -> tuple[int, ...]:
    got = tuple(learned) if isinstance(learned, Sequence) and not isinstance(learned, str) else None
    if got is None or any(isinstance(s, bool) or s not in slots for s in got) or len(set(got)) != len(got):
        raise ValueError(f"learned: distinct slots among the env's {list(slots)}, got {learned!r}")
    return got


def _family_build(config: ArenaConfig, family: list[ArenaConfig], generator: str) -> dict:
    """``build``'s keywords for a game that every config of ``family`` fits as params: the
    largest governance shapes, every strategy of the family (each player may play any)."""
    kw: dict[str, Any] = {"generator": generator}
    if not family:
        return kw
    configs = [config, *family]
    shapes = governance_shapes(configs)
    if shapes is not None:
        kw["governance"] = shapes
    strategies = [p.strategy for c in configs for p in c.require_players()]
    kw["extra_policies"] = tuple(dict.fromkeys(BUILTINS[s] if isinstance(s, str) else s for s in strategies))
    return kw


def _action(agent: str, x: Any) -> jax.Array:
    """One agent's action as a shape-() array; ValueError naming the agent and the value."""
    where = f"actions[{agent!r}]"
    if isinstance(x, int) and not isinstance(x, bool):
        if not INT32[0] <= x <= INT32[1]:
            raise ValueError(f"{where}: {short_repr(x)} is outside int32 [{INT32[0]}, {INT32[1]}]")
        return jnp.asarray(x, jnp.int32)
    if isinstance(x, float):
        return jnp.asarray(x, jnp.float32)
    if not isinstance(x, (jax.Array, np.ndarray, np.generic)):
        raise ValueError(f"{where}: must be a number or a shape-() array, got {short_repr(x)}")
    dtype = np.dtype(x.dtype) if not jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else None
    if dtype is None or dtype.kind not in "iuf":
        raise ValueError(f"{where}: must hold a number (int or float), got dtype {x.dtype}")
    if x.shape != ():
        raise ValueError(f"{where}: must be one value (shape ()), got shape {tuple(x.shape)}")
    if dtype.kind in "iu" and isinstance(x, (np.ndarray, np.generic)) and not INT32[0] <= int(x) <= INT32[1]:
        raise ValueError(f"{where}: {int(x)} is outside int32 [{INT32[0]}, {INT32[1]}]")
    return jnp.asarray(x)


class CommonsEnv(MultiAgentEnv):
    """The arena of ``config`` with the players at ``learned`` (default: all) acting through
    ``step``; the others play their configured strategies.

    action: ``"continuous"``: a float in [0, 1], the fraction of the player's capacity
        (``capacity(w) x harvest unit``, the built-ins' bound) it requests, so the harvest
        lies in [0, capacity]; ``"discrete"``: ``n_actions`` fractions 0, 1/(n-1), ..., 1.
    reward: ``"harvest"``: what the player received this turn; ``"wealth"``: the change of
        its wealth over the turn (sanctions, fines and wealth shocks count).
    family: other configs of the same players whose numbers this env also runs (governance,
        strategies, which slots learn: :meth:`params_for`), so one compiled program serves them all.
    Observations: float[2 D] per agent: the D observed values (environment variables, own
        wealth and capacity, peers' wealth and last harvest; ``obs_names``) with hidden ones
        as 0, then D flags (1 = observed), under the arena's observability rules.
    """

    def __init__(
        self,
        config: ArenaConfig | dict | str,
        *,
        learned: Sequence[int] | None = None,
        action: str = "continuous",
        n_actions: int = 11,
        reward: str = "harvest",
        generator: str = "hash",
        family: Sequence[ArenaConfig | dict | str] = (),
    ):
        cfg = ArenaConfig.load(config)
        players = cfg.require_players()
        self.slots = _slots(learned, len(players))
        if action not in ACTIONS:
            raise ValueError(f"action: one of {list(ACTIONS)}, got {action!r}")
        if action == "discrete" and (
            isinstance(n_actions, bool) or not isinstance(n_actions, int) or not 2 <= n_actions <= MAX_ACTIONS
        ):
            raise ValueError(f"n_actions: an integer in [2, {MAX_ACTIONS}], got {n_actions!r}")
        if reward not in REWARDS:
            raise ValueError(f"reward: one of {list(REWARDS)}, got {reward!r}")
        data = cfg.model_dump()
        for s in self.slots:  # the kernels' stand-in for an outside player: its actions come from step
            data["players"][s]["strategy"] = EXTERNAL
        self.config = ArenaConfig.load(data)
        self._build_kw = _family_build(self.config, [ArenaConfig.load(c) for c in family], generator)
        self.game, self.params = build(self.config, **self._build_kw)
        self.action_kind, self.n_actions, self.reward_kind = action, int(n_actions), reward
        super().__init__(num_agents=len(self.slots))
        self.agents = [f"agent_{s}" for s in self.slots]
        n = self.game.n_players
        self.obs_names = [*ENV_VARS, *PLAYER_VARS, *(f"{v}[{j}]" for v in PEER_VARS for j in range(n))]
        dim = 2 * len(self.obs_names)
        act = spaces.Box(0.0, 1.0, ()) if action == "continuous" else spaces.Discrete(self.n_actions)
        self.observation_spaces = {a: spaces.Box(-jnp.inf, jnp.inf, (dim,)) for a in self.agents}
        self.action_spaces = {a: act for a in self.agents}
        self._external = self.game.policies.index(EXTERNAL)

    def params_for(self, config: ArenaConfig | dict | str, learned: Sequence[int] | None = None) -> Params:
        """The numbers of ``config`` (a member of the env's ``family``, or the env's own config)
        for this env's game, with the slots ``learned`` (a subset of the env's slots, possibly
        empty; default all of them) acting through ``step`` and the env's other slots playing
        their configured strategy in ``config`` (their actions are then ignored). Games that differ
        only in such params share one compiled program: vmap ``reset``/``step`` over them.
        ValueError when the config needs another game (structure or shapes)."""
        cfg = ArenaConfig.load(config)
        players = cfg.require_players()
        if len(players) != self.game.n_players:
            raise ValueError(f"config: {len(players)} players, this env's game has {self.game.n_players}")
        own = self.slots if learned is None else _subset(learned, self.slots)
        wanted = [EXTERNAL if i in own else p.strategy for i, p in enumerate(players)]
        data = cfg.model_dump()
        base = self.config.require_players()
        for i, p in enumerate(data["players"]):  # the env's strategies, so the policies' order is the game's
            p["strategy"] = base[i].strategy
        game, params = build(ArenaConfig.load(data), **self._build_kw)
        mine, theirs = jax.tree.leaves(self.params), jax.tree.leaves(params)
        if (
            game != self.game
            or str(jax.tree.structure(params)) != str(jax.tree.structure(self.params))
            or any(np.shape(a) != np.shape(b) for a, b in zip(mine, theirs, strict=True))
        ):
            raise ValueError("config: needs another game than this env's (pass it in the env's family)")
        pols = [BUILTINS[p] if isinstance(p, str) else p for p in wanted]
        pol = self.game.policies
        allowed = self.game.candidates or (tuple(range(len(pol))),) * len(pols)
        missing = [i for i, p in enumerate(pols) if p not in pol or pol.index(p) not in allowed[i]]
        if missing:
            raise ValueError(f"players[{missing[0]}].strategy: not in this env's game (pass the config in its family)")
        index = cast(jax.Array, np.asarray([pol.index(p) for p in pols], np.int32))  # a numpy leaf, as build's
        return dataclasses.replace(params, players=dataclasses.replace(params.players, strategy=index))

    @staticmethod
    def arena_key(seed: int, arena: int) -> jax.Array:
        """uint32[2]: the key of arena ``arena`` of ``simulate(config, seed=seed)``."""
        return rng.arena_key(seed, arena)

    @staticmethod
    def _words(key: jax.Array) -> jax.Array:
        if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jax.random.key_data(key)
        return jnp.asarray(key, jnp.uint32).reshape(-1)[:2]

    @partial(jax.jit, static_argnums=(0,))
    def reset(self, key: jax.Array, params: Params | None = None) -> tuple[dict, EnvState]:
        """A new arena keyed by ``key`` (``params``: other numbers, e.g. a vmapped sweep)."""
        params = self.params if params is None else params
        return self._begin(self._words(key), self.game.init(params), params, jnp.zeros((), jnp.int32))

    def _begin(self, words, arena: ArenaState, params, step) -> tuple[dict, EnvState]:
        """The coming turn's decide phase and every agent's observation of it."""
        ahead = prepare(self.game, words, arena, params)
        arena_b, begun = decide_phase(self.game, words, arena, params)
        st = EnvState(
            arena=arena_b,
            begun=begun,
            ahead=ahead,
            key=words,
            params=params,
            done=~still_playing(arena_b, params),
            step=step,
        )
        return self.get_obs(st), st

    def get_obs(self, state: EnvState) -> dict:  # type: ignore[override]
        """Every agent's observation vector of the coming turn (the draws the turn itself uses)."""
        eff = effective_params(self.game, state.arena, state.params)
        o = observe(self.game, state.key, state.arena, eff, state.ahead["noise"])
        out = {}
        for a, s in zip(self.agents, self.slots, strict=True):
            v = jnp.concatenate(
                [jnp.stack([o[k][s] for k in (*ENV_VARS, *PLAYER_VARS)]), *(o[k][s] for k in PEER_VARS)]
            )
            seen = ~jnp.isnan(v)
            out[a] = jnp.concatenate([jnp.where(seen, v, 0.0), seen.astype(v.dtype)])
        return out

    def check_actions(self, actions: Any) -> dict[str, jax.Array]:
        """Each agent's action as a scalar array, checked at the edge (before jit or JAX sees
        it): a dict with exactly the env's agents, each a real number or a shape-() numeric
        array (one arena's action; vmap adds the batch axis), a Python or numpy integer
        within int32. ValueError naming the agent and the value otherwise. Values outside
        the action space are clipped (``requests``), as the kernels clamp."""
        if not isinstance(actions, Mapping):
            raise ValueError(f"actions: must be a dict keyed by agent {self.agents}, got {short_repr(actions)}")
        unknown = [k for k in actions if k not in self.agents]
        if unknown:
            raise ValueError(f"actions: unknown agent(s) {short_repr(unknown)}; this env's agents are {self.agents}")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"actions: no action for {missing}; every agent of {self.agents} acts each step")
        return {a: _action(a, actions[a]) for a in self.agents}

    def step(  # type: ignore[override]
        self, key: jax.Array, state: EnvState, actions: Any, reset_state: EnvState | None = None
    ):
        """JaxMARL's ``step`` (one turn, auto-reset when the arena ends) with ``actions`` checked
        first (:meth:`check_actions`): the base's ``step`` is jitted, so it is called after.
        The auto-reset keeps the arena's own params (``state.params``: a table of the env's
        family, a swept value), from the reset key JaxMARL's ``step`` would use."""
        checked = self.check_actions(actions)  # first: a bad action raises before anything runs
        if reset_state is None:
            reset_state = self.reset(jax.random.split(key)[1], state.params)[1]
        return super().step(key, state, checked, reset_state)

    def requests(self, state: EnvState, actions: dict) -> jax.Array:
        """float[N]: the learned players' requests (their action x capacity; others 0)."""
        actions = self.check_actions(actions)
        eff = effective_params(self.game, state.arena, state.params)
        cap = capacity(state.arena.wealth) * self.game.engine.harvest_unit(eff.engine)
        req = jnp.zeros_like(state.arena.wealth)
        for a, s in zip(self.agents, self.slots, strict=True):
            x = jnp.asarray(actions[a])
            frac = (
                jnp.clip(x.astype(req.dtype), 0.0, 1.0)
                if self.action_kind == "continuous"
                else jnp.clip(x, 0, self.n_actions - 1).astype(req.dtype) / (self.n_actions - 1)
            )
            req = req.at[s].set(jnp.where(jnp.isfinite(frac), frac, 0.0) * cap[s])
        return req

    def step_env(self, key: jax.Array, state: EnvState, actions: dict):  # type: ignore[override]
        """One turn: the learned players' actions, the built-ins' decisions, the whole turn."""
        req = self.requests(state, actions)
        # a slot learns where its strategy (a params leaf) is the placeholder: params_for sets it
        mask = state.params.players.strategy == self._external
        ext = External(mask=mask, actions=Actions(requests=req, announced=jnp.full_like(req, jnp.nan)), extra={})
        arena, record = step_phase(self.game, state.key, state.arena, state.begun, state.params, state.ahead, ext)
        obs, nxt = self._begin(state.key, arena, state.params, state.step + 1)
        gain = record.actual if self.reward_kind == "harvest" else arena.wealth - state.arena.wealth
        rewards = {a: gain[s] for a, s in zip(self.agents, self.slots, strict=True)}
        done = nxt.done | state.done
        dones = {a: done for a in self.agents} | {"__all__": done}
        return obs, nxt, rewards, dones, {"record": record}

    @partial(jax.jit, static_argnums=(0,))
    def get_avail_actions(self, state: EnvState) -> dict:
        n = self.n_actions if self.action_kind == "discrete" else 1
        return {a: jnp.ones((n,), bool) for a in self.agents}


__all__ = ["ACTIONS", "REWARDS", "CommonsEnv", "EnvState", "TurnRecord"]
