"""``Arena``: one live game driven turn by turn by the kernels (004_* A.1, 003_*, 001_*).

Lifecycle: ``Arena(config, seed=...)`` (status ``waiting``; the config's own players join as
builtins) -> ``join(spec)`` for more players (validated at join) -> ``start()`` (builds the
kernel game, writes ``meta.json``; status ``running``) -> ``tick()`` (one turn) or ``run()``
(to the end) -> ``close()`` (``summary.json`` and ``meta.json``, atomically; status
``closed``). ``await atick()`` / ``await arun()`` are the same from inside an event loop.

One turn (``LockstepBatch.tick``, shared with :class:`~bdpd_jax.host.live_batch.LiveBatch`):

1. kernel ``decide_phase`` (one jitted call for the whole batch): begin hooks, every
   player's observation, the builtins' decisions (placeholders for external players);
2. every external player of every arena is asked at once (``asyncio.gather``) with its
   observation envelope: the kernel observation (NaN -> null), ``pacts`` (``view_for``) and
   ``inbox`` (``inbox_at``: last turn's messages);
3. their tool actions are dispatched in player order (:meth:`Arena.dispatch`): messages on
   the :class:`MessageBus`, pact writes through the kernel's pure pact functions;
4. kernel ``step_phase`` (ONE jitted call for the batch): the step with the external
   requests and announcements, the host's pact table, violations and sanctions;
5. the turn record is appended to ``turns.jsonl`` (flushed and fsynced) and returned.

Randomness is the kernels': ``rng.arena_key(seed, arena_index)``, so a live arena whose
players are all builtin plays exactly the batched arena ``simulate(config, seed=seed,
arena_offset=arena_index)`` plays, bit for bit.

Parts live beside it: the batched turn in :mod:`~bdpd_jax.host.batch_runner`, the tools in
:mod:`~bdpd_jax.host.dispatch`, turn records in :mod:`~bdpd_jax.host.records`, owner-fired
perturbations in :mod:`~bdpd_jax.host.owner_perturb`, agent calls in
:mod:`~bdpd_jax.host.agent_calls`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import uuid
from collections import deque
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from bdpd_jax.build import build
from bdpd_jax.config import ArenaConfig, PlayerConfig
from bdpd_jax.governance_build import needed_slots
from bdpd_jax.kernels import rng
from bdpd_jax.limits import ARENA_INDEX_LIMIT, MAX_PACT_SLOTS, MAX_TURNS, check_int, check_magnitudes
from bdpd_jax.kernels import talk as T
from bdpd_jax.kernels.governance import NAME as GOV
from bdpd_jax.specs import arena_specs
from bdpd_jax.victory import report
from bdpd_jax.kernels.params import OBS_VARS, PEER_VARS
from bdpd_jax.host.agent_calls import spec_of_config_player
from bdpd_jax.host.agents.base import AgentResult
from bdpd_jax.host.batch_runner import LockstepBatch, slice_batch
from bdpd_jax.host.governance_agent import attach as attach_governor
from bdpd_jax.host.dispatch import TOOL_SCOPES, ActionBudget, dispatch_tool, sanction_offered
from bdpd_jax.host.messages import MessageBus
from bdpd_jax.host.owner_perturb import fire_perturbation
from bdpd_jax.host.persist import JsonlWriter, atomic_write_json, clean_stale_tmp
from bdpd_jax.host.operator import Operator
from bdpd_jax.host.players import PlayerSpec, make_agent, player_timeout_ms
from bdpd_jax.host.programs import EXTERNAL, has_governance
from bdpd_jax.host.records import tool_results, turn_record
from bdpd_jax.host.registry import PactRegistry, num, nums

DEFAULT_PACT_SLOTS = 16  # a live arena's pact table when the create names none (bound: limits.MAX_PACT_SLOTS)
DEFAULT_KEEP_RECORDS = 100  # turn records (and turns of messages) an arena keeps in memory


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class Arena:
    """One live arena. See the module docstring for the lifecycle and the turn."""

    def __init__(self, config: ArenaConfig | dict | str, *, seed: int = 0, arena_index: int = 0,
                 no_talk: bool = False, out_dir: str | Path | None = None, pact_slots: int = DEFAULT_PACT_SLOTS,
                 generator: str = "hash", turns: int | None = None, arena_id: str | None = None,
                 fsync: bool = True, client=None, executor=None, perturbable: bool = False,
                 operator: Operator | None = None, keep_records: int | None = DEFAULT_KEEP_RECORDS,
                 agent_kinds: dict[str, str] | None = None, governance_agent=None) -> None:
        if isinstance(config, ArenaConfig):
            cfg, config_players = config, list(config.players or [])
        else:  # the players may be only some of those who will join: validate them apart
            raw = ArenaConfig.load(config).model_dump() if not isinstance(config, dict) else dict(config)
            config_players = [PlayerConfig.model_validate(p) for p in (raw.pop("players", None) or [])]
            cfg = ArenaConfig.model_validate(raw)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
            raise ValueError(f"seed: must be an integer in [0, 2**32), got {seed!r}")
        check_int(arena_index, "arena_index", 0, ARENA_INDEX_LIMIT - 1)
        check_int(pact_slots, "pactSlots", 1, MAX_PACT_SLOTS)  # bounds: bdpd_jax/limits.py
        if turns is not None:
            check_int(turns, "turns", 1, MAX_TURNS)
        if keep_records is not None and (isinstance(keep_records, bool) or not isinstance(keep_records, int)
                                         or keep_records < 2):
            raise ValueError(f"keep_records: must be an integer >= 2 or None, got {keep_records!r}")
        self.seed = int(seed)
        self.arena_index = int(arena_index)
        self.no_talk = bool(no_talk)
        self.pact_slots = pact_slots
        self.generator = generator
        self.turns = turns
        self.fsync = fsync
        self.perturbable = bool(perturbable)  # every engine-supported type can be owner-fired
        if operator is not None and not isinstance(operator, Operator):
            operator = Operator.model_validate(operator)
        self.operator = operator or Operator()  # credentials and endpoints players may use
        # the owner's governance agent (host/governance_agent.py): drives an external plugin
        self.config, self.governor = attach_governor(cfg, governance_agent, self.operator, float(cfg.agentTimeout))
        # the kind shown in records and summary for a player replayed by a script (replay.py)
        self._shown_kinds = dict(agent_kinds or {})
        self.arena_id = arena_id or str(uuid.UUID(bytes=bytes(
            np.asarray(rng.arena_key(self.seed, self.arena_index)).astype("<u4").tobytes() * 2), version=4))
        self.out_dir = None if out_dir is None else Path(out_dir)
        self.specs: list[PlayerSpec] = []
        self.status = "waiting"
        self._client = client
        self._owns_client = False
        self._executor = executor
        # the last keep_records turn records (all when None); the full log is turns.jsonl
        self.keep_records = keep_records
        self.records: deque[dict[str, Any]] = deque(maxlen=keep_records)
        self._batch: LockstepBatch | None = None
        self._b = 0
        self.turn = 0
        self.done = False
        for i, p in enumerate(config_players):
            self.join(spec_of_config_player(i, p))

    # -- joining ----------------------------------------------------------------------------
    @property
    def players(self) -> list[str]:
        return [s.name for s in self.specs]

    def agent_kind(self, i: int) -> str:
        """Player i's agentType as records and summary.json show it (the original kind of a
        player that a replay plays from its log)."""
        s = self.specs[i]
        return self._shown_kinds.get(s.name, s.agentType) if s.agentType == "scripted" else s.agentType

    def join(self, spec: PlayerSpec | dict) -> str:
        """Add a player (004_* A.2 join). Returns its id. ValueError names the bad field."""
        if self.status != "waiting":
            raise ValueError(f"status: players join a waiting arena, this one is {self.status!r}")
        if not isinstance(spec, PlayerSpec):
            spec = PlayerSpec.model_validate(spec)
        check_magnitudes({k: getattr(spec, k) for k in ("privateResource", "intensity", "reductionFactor")}, "")
        if spec.name is None:
            spec = spec.model_copy(update={"name": f"p{len(self.specs)}"})
        if spec.name in self.players:
            raise ValueError(f"name: player {spec.name!r} already joined")
        if len(self.specs) >= self.config.model.maxPlayers:
            raise ValueError(f"players: the arena is full (maxPlayers={self.config.model.maxPlayers})")
        if spec.external:
            self.operator.check_player(spec)
            player_timeout_ms(spec, float(self.config.agentTimeout))
        self.specs.append(spec)
        return spec.name

    # -- start ------------------------------------------------------------------------------
    def kernel_config(self) -> ArenaConfig:
        """The kernels' view: builtins as configured, external players on the placeholder."""
        players = []
        for s in self.specs:
            if s.external:
                players.append(PlayerConfig(strategy=EXTERNAL, name=s.name, privateResource=s.privateResource))
            else:
                players.append(PlayerConfig(strategy=s.strategy, name=s.name, privateResource=s.privateResource,
                                            intensity=s.intensity, reductionFactor=s.reductionFactor, talk=s.talk))
        data = {k: getattr(self.config, k) for k in ArenaConfig.model_fields if k != "players"}
        return ArenaConfig.model_validate({**data, "players": players})

    @property
    def uses_tools(self) -> bool:
        return not self.no_talk and any(s.external for s in self.specs)

    def start(self) -> None:
        """Build the game, the bus, the pact registry and the agents; write meta.json."""
        if self.status != "waiting":
            raise ValueError(f"status: only a waiting arena starts, this one is {self.status!r}")
        n = len(self.specs)
        m = self.config.model
        if not m.minPlayers <= n <= m.maxPlayers:
            raise ValueError(f"players: {n} joined, outside [minPlayers={m.minPlayers}, maxPlayers={m.maxPlayers}]")
        kcfg = self.kernel_config()
        # with no external talker, exactly the batched build (a governance layer only if
        # the config has governance); talkers' proposals need room in the table
        gov = None
        if self.uses_tools:
            gov = {"pact_slots": max(self.pact_slots, needed_slots(kcfg))}
        game, params = build(kcfg, generator=self.generator, governance=gov,
                             perturb={"perturbable": True} if self.perturbable else None)
        params = dataclasses.replace(params, max_turns=jnp.asarray(int(self.turns or m.maxTurns), jnp.int32))
        self.external = np.asarray([s.external for s in self.specs], bool)
        if self.uses_tools:
            # players may propose at any turn: builtins answer proposals by their scripts
            # (the batched default, no talk config = accept) whether or not the config scripts any
            game = dataclasses.replace(game, layers=tuple(
                dataclasses.replace(ly, registry=True) if ly.name == GOV else ly for ly in game.layers))
        if has_governance(game) and self.external.any():
            # External players answer proposals with accept_pact only: the kernel's scripted
            # answers must neither accept nor reject for them.
            g = params.extra[GOV]
            tp = g.talk
            tp = dataclasses.replace(
                tp, accept_rule=jnp.where(jnp.asarray(self.external), T.NEVER, tp.accept_rule).astype(jnp.int32),
                decline_rejects=tp.decline_rejects & ~jnp.asarray(self.external))
            params = dataclasses.replace(params, extra={**params.extra, GOV: dataclasses.replace(g, talk=tp)})
        self.game, self.params = game, params
        self.max_turns = int(params.max_turns)
        self.key = rng.arena_key(self.seed, self.arena_index)
        self.external_index = game.policies.index(EXTERNAL) if EXTERNAL in game.policies else -1
        self.bus = MessageBus(seed=f"{self.seed}:{self.arena_index}", known_players=self.players)
        self.registry = PactRegistry(params.extra[GOV].pacts0, self.players, self.seed, self.arena_index) \
            if has_governance(game) else None
        if self._client is None and any(s.agentType in ("http", "llm") for s in self.specs):
            from bdpd_jax.host.agents.http import make_client

            # one small pool per arena: httpcore scans its whole pool for every request, so
            # one client shared by hundreds of players costs O(players^2) per turn
            self._client, self._owns_client = make_client(max(8, 2 * len(self.specs))), True
        tmo = float(self.config.agentTimeout)
        if self.governor is not None:
            self.governor.start(self._client, self.operator)
        self.agents = [make_agent(s, timeout_ms=tmo, no_talk=self.no_talk, client=self._client,
                                  executor=self._executor, operator=self.operator,
                                  sanction=sanction_offered(self.config)) for s in self.specs]
        self.turn = 0
        self.done = False
        self._announced: dict[str, float] = {}
        self.action_budget = ActionBudget()  # per-turn caps on each player's tool actions
        self._sanction_intents: dict[tuple[int, int], str | None] = {}  # (sanctioner, target) -> reason
        self._owner_fired: list[dict[str, Any]] = []
        self._spec_ids = [sp.id for sp in arena_specs(self.config)]
        self._in_tick = False
        self._created = _now()
        self._stats = {s.name: {"totalHarvest": 0.0, "fallbacks": 0, "errors": 0, "violations": 0, "sanctions": 0.0}
                       for s in self.specs}
        self._writer = None
        if self.out_dir is not None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            clean_stale_tmp(self.out_dir)
            self._writer = JsonlWriter(self.out_dir / "turns.jsonl", fsync=self.fsync)
            atomic_write_json(self.out_dir / "meta.json", self.meta())
        self.status = "running"

    def meta(self) -> dict[str, Any]:
        """meta.json: everything replay needs (config, seed, players, switches) and the status."""
        cfg = self.config.model_dump(mode="json", exclude={"players"})
        return {
            "arenaId": self.arena_id, "status": self.status if self.status != "waiting" else "running",
            "createdAt": getattr(self, "_created", None) or _now(), "seed": self.seed,
            "arenaIndex": self.arena_index, "noTalk": self.no_talk, "pactSlots": self.pact_slots,
            "generator": self.generator, "turns": self.turns, "perturbable": self.perturbable, "maxTurns": getattr(self, "max_turns", None),
            "config": cfg, "players": [s.public() for s in self.specs], "turnsPlayed": getattr(self, "turn", 0),
            **({"governanceAgent": self.governor.spec.public()} if self.governor is not None else {}),
        }

    # -- state ------------------------------------------------------------------------------
    def _ensure_batch(self) -> "LockstepBatch":
        if self.status == "waiting":
            self.start()
        if self.status != "running":
            raise ValueError(f"status: the arena is {self.status!r}")
        if self._batch is None:
            self._batch = LockstepBatch([self])
        return self._batch

    @property
    def state(self):
        """This arena's kernel state (numpy leaves, no batch axis)."""
        if self._batch is None:
            if self.status == "waiting":
                raise ValueError("status: the arena has not started")
            self._ensure_batch()
        return slice_batch(self._batch.state, self._b)

    def observation(self, player: str, obs: dict[str, np.ndarray], turn: int) -> dict[str, Any]:
        """The envelope ``player`` decides on: kernel observation + ``pacts`` + ``inbox``."""
        return self.envelopes([player], obs, turn)[player]

    def envelopes(self, players: list[str], obs: dict[str, np.ndarray], turn: int) -> dict[str, dict[str, Any]]:
        """The envelopes of several players of one turn; each observation array is converted
        to Python numbers once for all of them (``nums``)."""
        idx = {p: j for j, p in enumerate(self.players)}
        values = {name: nums(obs[name]) for name in OBS_VARS if name != "turn"}
        out = {}
        for player in players:
            i = idx[player]
            env: dict[str, Any] = {"turn": turn, "playerId": player}
            for name, v in values.items():
                if name in PEER_VARS:
                    row = v[i]
                    env[name] = {p: row[j] for p, j in idx.items() if j != i}
                else:
                    env[name] = v[i]
            env["pacts"] = self.registry.view_for(player) if self.registry is not None else {"active": [], "proposed": []}
            if not self.no_talk:
                env["inbox"] = self.bus.inbox_at(player, turn)
                env["toolResults"] = tool_results(self, player, turn)
            out[player] = env
        return out

    # -- tools ------------------------------------------------------------------------------
    def dispatch(self, player: str, action: Any, turn: int | None = None) -> dict[str, Any]:
        """Run one tool action of ``player`` at ``turn`` (default: the next turn to play).

        Returns ``{ok, scope, ...}``; an invalid action returns ``ok: false`` with a
        ``reason`` and changes nothing. Called between ticks (an owner acting for a player),
        a pact write goes straight into the kernel state, so the next turn sees it."""
        if self.status != "running":
            raise ValueError(f"status: tools act in a running arena, this one is {self.status!r}")
        out = self._dispatch(player, action, turn)
        if not self._in_tick:  # an owner action between ticks: logged so replay repeats it
            self.log_event("ownerAction", {"turn": self.turn + 1, "atTurn": turn, "playerId": player,
                                           "action": action})
        if out["ok"] and not self._in_tick and self.registry is not None and out["tool"] in (
                "propose_pact", "pledge", "accept_pact"):
            self._ensure_batch().set_pacts(self._b, self.registry.table)
        return out

    @property
    def in_tick(self) -> bool:
        """True while a turn is being played (the players' own actions are dispatched)."""
        return bool(getattr(self, "_in_tick", False))

    def add_sanction_intent(self, player: str, target: str, reason: str | None) -> None:
        """Record ``player``'s ``sanction(target, reason)`` call of this turn (several calls on
        one target count once); the step reads and clears them (:meth:`take_sanction_intents`)."""
        self._sanction_intents[(self.players.index(player), self.players.index(target))] = reason

    def take_sanction_intents(self) -> dict[tuple[int, int], str | None]:
        """This turn's (sanctioner, target) -> reason calls, handed over once."""
        out, self._sanction_intents = self._sanction_intents, {}
        return out

    def log_event(self, event: str, entry: dict[str, Any]) -> None:
        """Append an owner event line (``{"event": ..., "turn": next turn, ...}``) to
        turns.jsonl now: state changes made between ticks are on disk before they act."""
        if self._writer is not None:
            self._writer.write({"arenaId": self.arena_id, "event": event, **entry})

    def _dispatch(self, player: str, action: Any, turn: int | None = None) -> dict[str, Any]:
        return dispatch_tool(self, player, action, turn)

    # -- owner-fired perturbations (004_* A.2 POST /perturb) ---------------------------------
    def perturb(self, spec: str | dict) -> dict[str, Any]:
        """Fire a perturbation now, whatever its trigger: a spec id of the config, or an
        ad-hoc Table A.1 spec ``{id, type, trigger, payload}``. It applies to the state
        before the next turn, through ``kernels.perturb.apply_perturbation``, and is logged in
        the next turn record (``ownerPerturbations``) so replay fires it again. Needs a
        perturbation layer holding the type (``perturbable=True``, or the config's specs)."""
        return fire_perturbation(self, spec)

    # -- running ----------------------------------------------------------------------------
    async def atick(self) -> dict[str, Any] | None:
        """Play one turn; returns its record (None once the game is over)."""
        if self._batch is not None and len(self._batch.arenas) > 1:
            raise ValueError("status: this arena is part of a LiveBatch; tick the batch")
        batch = self._ensure_batch()
        if self.done:
            return None
        await batch.tick()
        return self.records[-1] if self.records and self.records[-1]["turn"] == self.turn else None

    def tick(self) -> dict[str, Any] | None:
        """``atick`` on the arena's own event loop (not from inside a running loop)."""
        return self._loop().run_until_complete(self.atick())

    async def arun(self, max_ticks: int | None = None) -> dict[str, Any]:
        """Tick until the game is over (or ``max_ticks``); then close. Returns the summary."""
        self._ensure_batch()
        k = 0
        while not self.done and (max_ticks is None or k < max_ticks):
            await self.atick()
            k += 1
        if self.done:
            return await self.aclose()
        return self.summary()

    def run(self, max_ticks: int | None = None) -> dict[str, Any]:
        return self._loop().run_until_complete(self.arun(max_ticks))

    def _loop(self) -> asyncio.AbstractEventLoop:
        if getattr(self, "_own_loop", None) is None:
            self._own_loop = asyncio.new_event_loop()
        return self._own_loop

    # -- closing ----------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """The post-game report (summary.json): outcome, victory evaluation and rankings
        (:mod:`bdpd_jax.victory`), players ranked by final wealth, pacts, counts."""
        st = self.state
        wealth = np.asarray(st.wealth)
        order = sorted(range(len(self.specs)), key=lambda i: (-float(wealth[i]), i))
        rank = {i: r + 1 for r, i in enumerate(order)}
        survived, collapse_turn = not bool(st.collapsed), int(st.collapse_turn) or None
        victory = report(players=self.players, survived=survived, collapse_turn=collapse_turn,
                         turns_played=int(st.turn), max_turns=self.max_turns,
                         initial=[s.privateResource for s in self.specs], final=[num(w) or 0.0 for w in wealth],
                         violations=[self._stats[p]["violations"] for p in self.players])
        return {
            "arenaId": self.arena_id, "status": self.status, "turnsPlayed": int(st.turn),
            "survived": survived, "collapseTurn": collapse_turn, "victory": victory,
            "finalStock": num(self.game.engine.stock(jax.tree_util.tree_map(jnp.asarray, st.engine))),
            "players": [{"playerId": s.name, "agentType": self.agent_kind(i),
                         "strategy": s.strategy if not s.external else None,
                         "wealth": num(wealth[i]), "rank": rank[i],
                         **self._stats[s.name]} for i, s in enumerate(self.specs)],
            "pacts": self.registry.compact() if self.registry is not None else [],
            "messages": len(self.bus),
        }

    async def aclose(self) -> dict[str, Any]:
        """Close: summary.json and meta.json written atomically; the clients are closed."""
        if self.status == "closed":
            return self.summary()
        if self.status == "waiting":
            raise ValueError("status: the arena never started")
        self._ensure_batch()  # an arena closed before its first tick still has a state to report
        self.status = "closed"
        summ = self.summary()
        if self.out_dir is not None:
            atomic_write_json(self.out_dir / "summary.json", summ)
            atomic_write_json(self.out_dir / "meta.json", {**self.meta(), "closedAt": _now()})
        if self._writer is not None:
            self._writer.close()
        for ag in self.agents:
            if ag is not None and hasattr(ag, "aclose"):
                await ag.aclose()
        if self.governor is not None:
            await self.governor.aclose()
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None
        return summ

    def close(self) -> dict[str, Any]:
        out = self._loop().run_until_complete(self.aclose())
        self._own_loop.close()
        self._own_loop = None
        return out

    # -- turn records -----------------------------------------------------------------------
    def _record(self, t: int, rec, calls: dict[int, AgentResult], tools: list, overridden: set) -> dict[str, Any]:
        return turn_record(self, t, rec, calls, tools, overridden)


__all__ = ["Arena", "TOOL_SCOPES"]
