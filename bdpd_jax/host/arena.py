"""``Arena``: one live game driven turn by turn by the kernels (004_* A.1, 003_*, 001_*).

Lifecycle: ``Arena(config, seed=...)`` (status ``waiting``; the config's own players join as
builtins) -> ``join(spec)`` for more players (validated at join) -> ``start()`` (builds the
kernel game, writes ``meta.json``; status ``running``) -> ``tick()`` (one turn) or ``run()``
(to the end) -> ``close()`` (``summary.json`` and ``meta.json``, atomically; status
``closed``). ``await atick()`` / ``await arun()`` are the same from inside an event loop.

One turn (``_Batch.tick``, shared with :class:`~bdpd_jax.host.live_batch.LiveBatch`):

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
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import datetime as _dt
import uuid
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from bdpd_jax.build import build
from bdpd_jax.config import ArenaConfig, PlayerConfig
from bdpd_jax.governance_build import needed_slots, sanction_specs, uses_governance
from bdpd_jax.kernels import rng
from bdpd_jax.kernels import talk as T
from bdpd_jax.kernels import perturb as pk
from bdpd_jax.kernels.governance import NAME as GOV
from bdpd_jax.kernels.perturb import PerturbLayer
from bdpd_jax.perturb_results import perturb_record, target_label
from bdpd_jax.specs import arena_specs, compile_spec
from bdpd_jax.kernels.params import OBS_VARS, PEER_VARS
from bdpd_jax.host.agents.base import AgentResult, fallback_harvest
from bdpd_jax.host.messages import MessageBus
from bdpd_jax.host.persist import JsonlWriter, atomic_write_json
from bdpd_jax.host.players import PlayerSpec, make_agent
from bdpd_jax.host.programs import EXTERNAL, has_governance, programs
from bdpd_jax.host.registry import PactRegistry, num
from bdpd_jax.host.tools import TALK_TOOLS, validate_action

DEFAULT_PACT_SLOTS = 16
# 003_* tool table, column "Scope"
TOOL_SCOPES: dict[str, str] = {
    "broadcast": "all-others",
    "send_private": "one player",
    "announce_intended_harvest": "all-others",
    "propose_pact": "named parties",
    "accept_pact": "proposer + parties",
    "pledge": "self-only",
}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _slice(tree, b: int):
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[..., b], tree)


def _stack(trees: list):
    return jax.tree_util.tree_map(lambda *xs: np.stack(xs, axis=-1), *trees)


def _spec_of_config_player(i: int, p: PlayerConfig) -> PlayerSpec:
    if not isinstance(p.strategy, str):
        raise ValueError(f"players[{i}].strategy: a live arena needs built-in strategy names, got {p.strategy!r}")
    return PlayerSpec(agentType="builtin", name=p.name or f"p{i}", privateResource=p.privateResource,
                      strategy=p.strategy, intensity=p.intensity, reductionFactor=p.reductionFactor,
                      talk=None if p.talk is None else p.talk.model_dump(mode="json"))


class Arena:
    """One live arena. See the module docstring for the lifecycle and the turn."""

    def __init__(self, config: ArenaConfig | dict | str, *, seed: int = 0, arena_index: int = 0,
                 no_talk: bool = False, out_dir: str | Path | None = None, pact_slots: int = DEFAULT_PACT_SLOTS,
                 generator: str = "hash", turns: int | None = None, arena_id: str | None = None,
                 fsync: bool = True, client=None, executor=None, perturbable: bool = False) -> None:
        if isinstance(config, ArenaConfig):
            cfg, config_players = config, list(config.players or [])
        else:  # the players may be only some of those who will join: validate them apart
            raw = ArenaConfig.load(config).model_dump() if not isinstance(config, dict) else dict(config)
            config_players = [PlayerConfig.model_validate(p) for p in (raw.pop("players", None) or [])]
            cfg = ArenaConfig.model_validate(raw)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
            raise ValueError(f"seed: must be an integer in [0, 2**32), got {seed!r}")
        if isinstance(arena_index, bool) or not isinstance(arena_index, (int, np.integer)) or arena_index < 0:
            raise ValueError(f"arena_index: must be an integer >= 0, got {arena_index!r}")
        if isinstance(pact_slots, bool) or not isinstance(pact_slots, int) or pact_slots < 1:
            raise ValueError(f"pact_slots: must be an integer >= 1, got {pact_slots!r}")
        if turns is not None and (isinstance(turns, bool) or not isinstance(turns, int) or turns < 1):
            raise ValueError(f"turns: must be an integer >= 1, got {turns!r}")
        self.config = cfg
        self.seed = int(seed)
        self.arena_index = int(arena_index)
        self.no_talk = bool(no_talk)
        self.pact_slots = pact_slots
        self.generator = generator
        self.turns = turns
        self.fsync = fsync
        self.perturbable = bool(perturbable)  # every engine-supported type can be owner-fired
        self.arena_id = arena_id or str(uuid.UUID(bytes=bytes(
            np.asarray(rng.arena_key(self.seed, self.arena_index)).astype("<u4").tobytes() * 2), version=4))
        self.out_dir = None if out_dir is None else Path(out_dir)
        self.specs: list[PlayerSpec] = []
        self.status = "waiting"
        self._client = client
        self._owns_client = False
        self._executor = executor
        self.records: list[dict[str, Any]] = []  # every turn record of this run
        self._batch: _Batch | None = None
        self._b = 0
        self.turn = 0
        self.done = False
        for i, p in enumerate(config_players):
            self.join(_spec_of_config_player(i, p))

    # -- joining ----------------------------------------------------------------------------
    @property
    def players(self) -> list[str]:
        return [s.name for s in self.specs]

    def join(self, spec: PlayerSpec | dict) -> str:
        """Add a player (004_* A.2 join). Returns its id. ValueError names the bad field."""
        if self.status != "waiting":
            raise ValueError(f"status: players join a waiting arena, this one is {self.status!r}")
        if not isinstance(spec, PlayerSpec):
            spec = PlayerSpec.model_validate(spec)
        if spec.name is None:
            spec = spec.model_copy(update={"name": f"p{len(self.specs)}"})
        if spec.name in self.players:
            raise ValueError(f"name: player {spec.name!r} already joined")
        if len(self.specs) >= self.config.model.maxPlayers:
            raise ValueError(f"players: the arena is full (maxPlayers={self.config.model.maxPlayers})")
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
        # n_specs >= 1: kernels/sanctions.amounts cannot reshape a K = 0 spec table (an
        # inactive padding spec costs nothing); otherwise, with no external talker, exactly
        # the batched build (a governance layer only if the config has governance)
        gov = None
        if self.uses_tools:
            gov = {"pact_slots": max(self.pact_slots, needed_slots(kcfg)),
                   "n_specs": max(1, len(sanction_specs(kcfg)))}
        elif uses_governance(kcfg) and not sanction_specs(kcfg):
            gov = {"n_specs": 1}
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
        self.agents = [make_agent(s, timeout_ms=tmo, no_talk=self.no_talk, client=self._client,
                                  executor=self._executor) for s in self.specs]
        self.turn = 0
        self.done = False
        self._announced: dict[str, float] = {}
        self._owner_fired: list[dict[str, Any]] = []
        self._spec_ids = [sp.id for sp in arena_specs(self.config)]
        self._in_tick = False
        self._created = _now()
        self._stats = {s.name: {"fallbacks": 0, "errors": 0, "violations": 0, "sanctions": 0.0} for s in self.specs}
        self._writer = None
        if self.out_dir is not None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
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
        }

    # -- state ------------------------------------------------------------------------------
    def _ensure_batch(self) -> "_Batch":
        if self.status == "waiting":
            self.start()
        if self.status != "running":
            raise ValueError(f"status: the arena is {self.status!r}")
        if self._batch is None:
            self._batch = _Batch([self])
        return self._batch

    @property
    def state(self):
        """This arena's kernel state (numpy leaves, no batch axis)."""
        if self._batch is None:
            if self.status == "waiting":
                raise ValueError("status: the arena has not started")
            self._ensure_batch()
        return _slice(self._batch.state, self._b)

    def observation(self, player: str, obs: dict[str, np.ndarray], turn: int) -> dict[str, Any]:
        """The envelope ``player`` decides on: kernel observation + ``pacts`` + ``inbox``."""
        i = self.players.index(player)
        env: dict[str, Any] = {"turn": turn, "playerId": player}
        for name in OBS_VARS:
            v = obs[name]
            if name in PEER_VARS:
                env[name] = {p: num(v[i, j]) for j, p in enumerate(self.players) if j != i}
            elif name != "turn":
                env[name] = num(v[i])
        env["pacts"] = self.registry.view_for(player) if self.registry is not None else {"active": [], "proposed": []}
        if not self.no_talk:
            env["inbox"] = self.bus.inbox_at(player, turn)
        return env

    # -- tools ------------------------------------------------------------------------------
    def dispatch(self, player: str, action: Any, turn: int | None = None) -> dict[str, Any]:
        """Run one tool action of ``player`` at ``turn`` (default: the next turn to play).

        Returns ``{ok, scope, ...}``; an invalid action returns ``ok: false`` with a
        ``reason`` and changes nothing. Called between ticks (an owner acting for a player),
        a pact write goes straight into the kernel state, so the next turn sees it."""
        if self.status != "running":
            raise ValueError(f"status: tools act in a running arena, this one is {self.status!r}")
        out = self._dispatch(player, action, turn)
        if out["ok"] and not self._in_tick and self.registry is not None and out["tool"] in (
                "propose_pact", "pledge", "accept_pact"):
            self._ensure_batch().set_pacts(self._b, self.registry.table)
        return out

    def _dispatch(self, player: str, action: Any, turn: int | None = None) -> dict[str, Any]:
        turn = self.turn + 1 if turn is None else int(turn)
        tool = action.get("tool") if isinstance(action, dict) else None
        scope = TOOL_SCOPES.get(tool, "none")

        def no(reason: str) -> dict[str, Any]:
            return {"ok": False, "scope": scope, "tool": tool, "reason": reason}

        if player not in self.players:
            return no(f"playerId: unknown player {player!r}")
        if tool not in TALK_TOOLS:
            return no(f"tool: unknown tool {tool!r}; known: {list(TALK_TOOLS)}")
        if self.no_talk:
            return no("tool: cheap talk is disabled in this arena (no_talk)")
        try:
            a = validate_action(action)
        except ValueError as exc:
            return no(str(exc))
        ok = {"ok": True, "scope": scope, "tool": tool}
        if tool == "broadcast":
            return {**ok, "id": self.bus.broadcast(player, a["text"], turn)["id"]}
        if tool == "send_private":
            if a["target"] == player:
                return no("target: cannot send a private message to oneself")
            msg = self.bus.send_private(player, a["target"], a["text"], turn)
            if not self.bus.is_known(a["target"]):
                # 003_*: a foreign target in a standalone arena is stored for audit, read by no one
                return {**no(f"target: unknown player {a['target']!r} (stored for audit, read by no one)"),
                        "id": msg["id"]}
            return {**ok, "id": msg["id"]}
        if tool == "announce_intended_harvest":
            msg = self.bus.announce(player, a["value"], turn)
            self._announced[player] = msg["value"]
            return {**ok, "id": msg["id"], "value": msg["value"]}
        reg = self.registry
        if reg is None:
            return no("pacts: this arena has no pact table")
        if tool == "propose_pact":
            unknown = [p for p in a["parties"] if p not in self.players]
            if unknown:
                return no(f"parties: unknown player(s) {unknown}")
            slot, why = reg.propose(player, a["parties"], a["terms"], turn)
            if slot < 0:
                return no(why)
            return {**ok, "pactId": reg.id_of(slot), "status": reg.status(slot)}
        if tool == "pledge":
            slot, why = reg.pledge(player, a["maxHarvest"], turn)
            if slot < 0:
                return no(why)
            return {**ok, "pactId": reg.id_of(slot), "status": reg.status(slot)}
        # accept_pact
        slot = reg.slot_of(a["pactId"])
        if slot is None:
            return no(f"pactId: unknown pact {a['pactId']!r}")
        i = self.players.index(player)
        tb = reg.table
        if not tb.parties[slot, i]:
            return no(f"pactId: {player!r} is not a party to pact {a['pactId']!r}")
        st = reg.status(slot)
        if st != "proposed":
            return no(f"pactId: pact {a['pactId']!r} is {st}, not proposed")
        if tb.accepted[slot, i]:
            return no(f"pactId: {player!r} has already accepted pact {a['pactId']!r}")
        if int(tb.proposed_turn[slot]) >= turn:
            return no(f"pactId: pact {a['pactId']!r} was proposed this turn; it can be accepted from the next")
        reg.accept(slot, player, turn)
        return {**ok, "pactId": a["pactId"], "status": reg.status(slot)}

    # -- owner-fired perturbations (004_* A.2 POST /perturb) ---------------------------------
    def perturb(self, spec: str | dict) -> dict[str, Any]:
        """Fire a perturbation now, whatever its trigger: a spec id of the config, or an
        ad-hoc Table A.1 spec ``{id, type, trigger, payload}``. It applies to the state
        before the next turn, through ``kernels.perturb.apply_perturbation``, and is logged in
        the next turn record (``ownerPerturbations``) so replay fires it again. Needs a
        perturbation layer holding the type (``perturbable=True``, or the config's specs)."""
        if self.status != "running" or self._in_tick:
            raise ValueError(f"status: perturbations are fired between ticks of a running arena ({self.status!r})")
        if self.done:
            raise ValueError("status: the game is over")
        if isinstance(spec, str):
            found = [sp for sp in arena_specs(self.config) if sp.id == spec]
            if not found:
                raise ValueError(f"specId: no perturbation {spec!r} in the config; known: {self._spec_ids}")
            spec = found[0]
        slot = compile_spec(spec, self.kernel_config(), self.game.policies)
        if not any(isinstance(ly, PerturbLayer) and pk.TYPES[int(slot.code)] in ly.types for ly in self.game.layers):
            raise ValueError(f"spec.type: {pk.TYPES[int(slot.code)]!r} cannot be fired in this arena; "
                             "create it with perturbable=True")
        batch = self._ensure_batch()
        state = jax.tree_util.tree_map(jnp.asarray, _slice(batch.state, self._b))
        new, rec = _owner_apply(self.game)(state, slot, self.params)
        batch.set_state(self._b, new)
        kind = pk.TYPES[int(rec["code"])]
        entry = {"turn": self.turn + 1, "spec": spec if isinstance(spec, dict) else spec.model_dump(mode="json"),
                 "type": kind, "target": target_label(kind, int(rec["target"])), "value": num(rec["value"])}
        self._owner_fired.append(entry)
        return entry

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
        """The post-game report (summary.json): outcome, ranking by wealth, pacts, counts."""
        st = self.state
        wealth = np.asarray(st.wealth)
        order = sorted(range(len(self.specs)), key=lambda i: (-float(wealth[i]), i))
        rank = {i: r + 1 for r, i in enumerate(order)}
        harvest = {p: 0.0 for p in self.players}
        for rec in self.records:
            for d in rec["decisions"]:
                harvest[d["playerId"]] += d["actual"] or 0.0
        return {
            "arenaId": self.arena_id, "status": self.status, "turnsPlayed": int(st.turn),
            "survived": not bool(st.collapsed), "collapseTurn": int(st.collapse_turn) or None,
            "finalStock": num(self.game.engine.stock(jax.tree_util.tree_map(jnp.asarray, st.engine))),
            "players": [{"playerId": s.name, "agentType": s.agentType,
                         "strategy": s.strategy if not s.external else None,
                         "wealth": num(wealth[i]), "totalHarvest": harvest[s.name], "rank": rank[i],
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
        players = self.players
        decisions = []
        errors = []
        for i, s in enumerate(self.specs):
            d = {"playerId": s.name, "agentType": s.agentType, "requested": num(rec.requested[i]),
                 "actual": num(rec.actual[i]), "announced": num(rec.announced[i]), "wealth": num(rec.wealth[i]),
                 "sanction": num(rec.sanction[i]), "invalid": bool(rec.invalid[i])}
            if i in calls:
                r = calls[i]
                d.update({"harvest": r.harvest, "fallback": r.fallback, "error": r.error,
                          "elapsedMs": round(r.elapsed_ms, 3), "actions": r.actions})
                if r.error:
                    errors.append({"playerId": s.name, "error": r.error})
                    self._stats[s.name]["errors"] += 1
                self._stats[s.name]["fallbacks"] += int(r.fallback)
            elif i in overridden:
                d["overridden"] = True
            decisions.append(d)
        violations, sanctions = [], []
        g = rec.extra.get(GOV) if isinstance(rec.extra, dict) else None
        if isinstance(g, dict) and "end" in g:
            g = g["end"]
        if self.registry is not None and g:
            violations = self.registry.record_violations(t, np.asarray(g["violated"]), np.asarray(rec.actual),
                                                         np.asarray(g["ordinal"]), np.asarray(g["fired"]))
            for ev in violations:
                self._stats[ev["partyId"]]["violations"] += 1
            for i, p in enumerate(players):
                if rec.sanction[i] > 0 or g["fired"][i] > 0:
                    sanctions.append({"playerId": p, "amount": num(rec.sanction[i]), "fired": int(g["fired"][i])})
                    self._stats[p]["sanctions"] += float(rec.sanction[i])
        fired = []
        pr = perturb_record(rec.extra) if isinstance(rec.extra, dict) else None
        if pr:
            for p in np.flatnonzero(np.asarray(pr["fired"])):
                kind = pk.TYPES[int(pr["code"][p])]
                fired.append({"id": self._spec_ids[p] if p < len(self._spec_ids) else None, "type": kind,
                              "target": target_label(kind, int(pr["target"][p])), "value": num(pr["value"][p])})
        owner, self._owner_fired = self._owner_fired, []
        return {
            "arenaId": self.arena_id, "turn": t, "stock": num(rec.stock), "regen": num(rec.regen),
            "reserveDrawn": num(rec.reserve_drawn), "collapsed": bool(rec.collapsed),
            "decisions": decisions,
            "messages": self.bus.messages_for_turn(t),
            "tools": tools,
            "pacts": self.registry.compact() if self.registry is not None else [],
            "violations": violations,
            "sanctions": sanctions,
            "errors": errors,
            "metrics": {k: num(v) for k, v in rec.metrics.items()},
            "perturbations": fired,
            "ownerPerturbations": owner,
        }


class _Batch:
    """Arenas of one Game advanced in lockstep: one batched kernel call per phase per turn."""

    def __init__(self, arenas: list[Arena]) -> None:
        if not arenas:
            raise ValueError("arenas: need at least one arena")
        for a in arenas:
            if a.status == "waiting":
                a.start()
            if a._batch is not None and a._batch is not self:
                raise ValueError(f"arenas: arena {a.arena_id!r} is already in another batch")
        game = arenas[0].game
        for k, a in enumerate(arenas):
            if a.game != game:
                raise ValueError(f"arenas[{k}]: its game (players, strategies, engine, layers) differs from "
                                 "arenas[0]'s; a batch runs one compiled program")
            if a.turn != arenas[0].turn:
                raise ValueError(f"arenas[{k}]: at turn {a.turn}, arenas[0] at {arenas[0].turn}")
        self.arenas = arenas
        self.game = game
        self.gov = has_governance(game)
        init, self._decide, self._step = programs(game)
        self.keys = jnp.stack([a.key for a in arenas], axis=-1)
        self.params = jax.tree_util.tree_map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs], axis=-1),
                                             *[a.params for a in arenas])
        self.state = init(self.params)
        for b, a in enumerate(arenas):
            a._batch, a._b = self, b

    def set_state(self, b: int, state) -> None:
        """Write arena b's (unbatched) state into the batch state."""
        self.state = jax.tree_util.tree_map(lambda x, v: jnp.asarray(x).at[..., b].set(jnp.asarray(v)),
                                            self.state, state)

    def set_pacts(self, b: int, table) -> None:
        """Write arena b's pact table into the batch state (a tool used between ticks)."""
        gs = self.state.extra[GOV]
        pk = jax.tree_util.tree_map(lambda x, v: jnp.asarray(x).at[..., b].set(jnp.asarray(v)), gs.pacts, table)
        self.state = dataclasses.replace(
            self.state, extra={**self.state.extra, GOV: dataclasses.replace(gs, pacts=pk)})

    async def tick(self) -> None:
        """One turn of every arena still playing."""
        arenas = self.arenas
        if all(a.done for a in arenas):
            return
        for a in arenas:
            a._in_tick = True
        try:
            await self._tick()
        finally:
            for a in arenas:
                a._in_tick = False

    async def _tick(self) -> None:
        arenas = self.arenas
        sb, begun, obs, pacts_d = self._decide(self.keys, self.state, self.params)
        obs_np = jax.tree_util.tree_map(np.asarray, obs)
        wealth = np.asarray(sb.wealth)
        strategy = np.asarray(sb.strategy)
        pk_b = jax.tree_util.tree_map(np.asarray, sb.extra[GOV].pacts) if self.gov else None
        pk_d = jax.tree_util.tree_map(np.asarray, pacts_d) if self.gov else None
        n, nb = wealth.shape
        jobs, where = [], []
        overridden: list[set] = [set() for _ in arenas]
        for b, a in enumerate(arenas):
            if a.done:
                continue
            t = a.turn + 1
            a._announced = {}
            if a.registry is not None:
                a.registry.sync(_slice(pk_b, b))
            ob = {k: v[..., b] for k, v in obs_np.items()}
            for i, s in enumerate(a.specs):
                if not s.external:
                    continue
                if strategy[i, b] != a.external_index:  # strategy_override: a builtin decides
                    overridden[b].add(i)
                    continue
                env = a.observation(s.name, ob, t)
                jobs.append(_ask(a.agents[i], env, float(wealth[i, b]), s.agentType))
                where.append((b, i))
        results = await asyncio.gather(*jobs)
        by_arena: list[dict[int, AgentResult]] = [{} for _ in arenas]
        for (b, i), r in zip(where, results):
            by_arena[b][i] = r
        ext = np.zeros((n, nb), bool)
        ext_req = np.zeros((n, nb), np.float64)
        ext_ann = np.full((n, nb), np.nan)
        tools_by_arena: list[list] = [[] for _ in arenas]
        for b, a in enumerate(arenas):
            if a.registry is not None:
                a.registry.sync(_slice(pk_d, b))
            if a.done:
                continue
            t = a.turn + 1
            for i in sorted(by_arena[b]):
                r = by_arena[b][i]
                name = a.specs[i].name
                ext[i, b] = True
                ext_req[i, b] = r.harvest
                for act in r.actions:
                    res = a._dispatch(name, act, t)
                    tools_by_arena[b].append({"playerId": name, "action": act, "result": res})
                if name in a._announced:
                    ext_ann[i, b] = a._announced[name]
        pacts = _stack([a.registry.table for a in arenas]) if self.gov else None
        dt = sb.wealth.dtype
        state, rec = self._step(self.keys, sb, begun, jnp.asarray(ext),
                                jnp.asarray(ext_req, dt), jnp.asarray(ext_ann, dt), pacts, self.params)
        self.state = state
        rec_np = jax.tree_util.tree_map(np.asarray, rec)
        pk_new = jax.tree_util.tree_map(np.asarray, state.extra[GOV].pacts) if self.gov else None
        for b, a in enumerate(arenas):
            if a.done:
                continue
            r = _slice(rec_np, b)
            if a.registry is not None:
                a.registry.sync(_slice(pk_new, b))
            if not bool(r.played):
                a.done = True
                continue
            t = int(r.turn)
            a.turn = t
            line = a._record(t, r, by_arena[b], tools_by_arena[b], overridden[b])
            a.records.append(line)
            if a._writer is not None:
                a._writer.write(line)
            if bool(r.collapsed) or t >= a.max_turns:
                a.done = True


@functools.lru_cache(maxsize=32)
def _owner_apply(game):
    return jax.jit(functools.partial(pk.apply_perturbation, game))


async def _ask(agent, env: dict[str, Any], wealth: float, kind: str) -> AgentResult:
    """One external decision; an agent that raises still yields the fallback harvest."""
    try:
        if kind == "llm":
            return await agent.decide(env, wealth, inbox=env.get("inbox"))
        return await agent.decide(env, wealth)
    except Exception as exc:  # noqa: BLE001 - a broken agent must never stall the turn
        return AgentResult(fallback_harvest(wealth), f"agent: {type(exc).__name__}: {exc}", [], 0.0, True)


__all__ = ["Arena", "TOOL_SCOPES"]
