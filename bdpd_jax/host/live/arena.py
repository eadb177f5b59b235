"""``Arena``: one live game driven turn by turn by the kernels (004_* A.1, 003_*, 001_*).

Lifecycle: ``Arena(config, seed=...)`` (status ``waiting``; the config's own players join as
builtins) -> ``join(spec)`` for more players (validated at join) -> ``start()`` (builds the
kernel game, writes ``meta.json``; status ``running``) -> ``tick()`` (one turn) or ``run()``
(to the end) -> ``close()`` (``summary.json`` and ``meta.json``, atomically; status
``closed``). ``await atick()`` / ``await arun()`` / ``await aclose()`` are the same from
inside an event loop; the sync calls refuse to run inside one (one event loop per process,
docs/semantics/live/arena.md "One event loop").

The arena's run (:class:`~bdpd_jax.host.live.arena_run.ArenaRun`) owns its kernel state for its
whole life. One turn is one ``LockstepBatch.tick`` (:mod:`~bdpd_jax.host.live.batch_runner`, shared
with :class:`~bdpd_jax.host.live.live_batch.LiveBatch` and the server's groups), which stacks the
members' states in and writes each new one back: the owner's governance agent, if attached
(:mod:`~bdpd_jax.host.live.governance_agent`), decide phase, external players asked at once, their
tool actions, step phase, the turn record appended to ``turns.jsonl``.

Randomness is the kernels': ``rng.arena_key(seed, arena_index)``, so a live arena whose
players are all builtin plays exactly the batched arena ``simulate(config, seed=seed,
arena_offset=arena_index)`` plays, bit for bit.

``start()`` prepares the arena once (its ``PreparedRun``: ``arena_args.prepare_live``) and
builds one :class:`~bdpd_jax.host.live.arena_run.ArenaRun` the arena owns, holding it; its
collaborators (batch_runner, dispatch, records, envelope, owner_perturb, arena_args) take
that run state, never the Arena. Its HTTP client and its players' agents
are its :class:`~bdpd_jax.host.live.arena_callers.ArenaCallers`; its sync calls run through a
:class:`~bdpd_jax.host.live.sync_loop.SyncLoop`.

The arena owns its lifecycle: its status changes here only, and here only is it checked for a
tick (:meth:`Arena.atick`); the server's routes and ticker rely on that check (its
``ValueError("status: ...")`` is a 409 there).
"""

from __future__ import annotations

import uuid
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.host.live.arena_args import arena_inputs, joining_player, kernel_config, prepare_live
from bdpd_jax.host.live.arena_callers import ArenaCallers
from bdpd_jax.host.live.arena_llm import ArenaLLM
from bdpd_jax.host.live.arena_run import ArenaRun, utc_now, waits_on
from bdpd_jax.host.live.arena_view import ArenaView
from bdpd_jax.host.live.batch_runner import LockstepBatch
from bdpd_jax.host.live.dispatch import TOOL_SCOPES, dispatch_tool
from bdpd_jax.host.live.governance_agent import GovernorSpec
from bdpd_jax.host.live.governance_agent import attach as attach_governor
from bdpd_jax.host.live.operator import Operator
from bdpd_jax.host.live.owner_perturb import fire_perturbation, owner_slot
from bdpd_jax.host.live.persist import JsonlWriter, atomic_write_json, clean_stale_tmp
from bdpd_jax.host.live.players import LivePlayerConfig
from bdpd_jax.host.live.records import summary
from bdpd_jax.host.live.sync_loop import Offload, SyncLoop, inline, run_to_end
from bdpd_jax.kernels import rng
from bdpd_jax.prepare.prepared import PreparedRun

DEFAULT_PACT_SLOTS = 16  # a live arena's pact table when the create names none (bound: limits.MAX_PACT_SLOTS)
DEFAULT_KEEP_RECORDS = 100  # turn records (and turns of messages) an arena keeps in memory


class Arena(ArenaView):
    """One live arena. See the module docstring for the lifecycle and the turn; what it shows of
    its run (turn, records, state, players, ...) is :class:`~bdpd_jax.host.live.arena_view.ArenaView`'s."""

    def __init__(
        self,
        config: ArenaConfig | dict | str,
        *,
        seed: int = 0,
        arena_index: int = 0,
        no_talk: bool = False,
        out_dir: str | Path | None = None,
        pact_slots: int = DEFAULT_PACT_SLOTS,
        generator: str = "hash",
        turns: int | None = None,
        arena_id: str | None = None,
        fsync: bool = True,
        client=None,
        executor=None,
        perturbable: bool = False,
        operator: Operator | None = None,
        keep_records: int | None = DEFAULT_KEEP_RECORDS,
        agent_kinds: dict[str, str] | None = None,
        governance_agent: GovernorSpec | dict | None = None,
        llm_cache: bool | None = None,
        token_budget: int | None = None,
    ) -> None:
        cfg, config_players = arena_inputs(
            config, seed=seed, arena_index=arena_index, pact_slots=pact_slots, turns=turns, keep_records=keep_records
        )
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
        # the owner's governance agent (host/live/governance_agent.py): drives an external plugin
        self.config, self.governor = attach_governor(cfg, governance_agent, self.operator, float(cfg.agent_timeout))
        # the kind shown in records and summary for a player replayed by a script (replay.py)
        self._shown_kinds = dict(agent_kinds or {})
        self.arena_id = arena_id or str(
            uuid.UUID(
                bytes=bytes(np.asarray(rng.arena_key(self.seed, self.arena_index)).astype("<u4").tobytes() * 2),
                version=4,
            )
        )
        self.out_dir = None if out_dir is None else Path(out_dir)
        self._joined: list[LivePlayerConfig] = []  # the players, until start hands them to the run
        self.status = "waiting"
        # the LLM players' limits, response cache and token account (issue 38; host/live/arena_llm.py)
        self.llm = ArenaLLM(
            self.operator, llm_cache=llm_cache, token_budget=token_budget, out_dir=self.out_dir, scope=self.arena_id
        )
        # the HTTP client (lent or its own) and the agents' factory
        self._callers = ArenaCallers(
            self.config,
            no_talk=self.no_talk,
            operator=self.operator,
            owner=self.arena_id,
            client=client,
            executor=executor,
            llm=self.llm,
        )
        # the last keep_records turn records (all when None); the full log is turns.jsonl
        self.keep_records = keep_records
        self._run: ArenaRun | None = None  # built by start()
        self._alone: LockstepBatch | None = None  # its batch of one (holds no state)
        self._loop = SyncLoop("Arena")  # tick() / run() / close() of an arena that waits on someone
        for spec in config_players:
            self.join(spec)

    # -- joining ----------------------------------------------------------------------------
    def join(self, spec: LivePlayerConfig | dict) -> str:
        """Add a player (004_* A.2 join). Returns its id. ValueError names the bad field."""
        if self.status != "waiting":
            raise ValueError(f"status: players join a waiting arena, this one is {self.status!r}")
        spec = joining_player(spec, self._joined, self.config, self.operator)
        self._joined.append(spec)
        return spec.player_id

    def use_client(self, client) -> None:
        """Lend ``client`` (one pooled HTTP client, closed by its owner) to this arena's HTTP /
        LLM agents: taken only by a waiting arena that has no client yet."""
        if self.status == "waiting":
            self._callers.lend(client)

    # -- start ------------------------------------------------------------------------------
    def kernel_config(self) -> ArenaConfig:
        """The kernels' view: builtins as configured, external players on the placeholder
        (once started, the config its PreparedRun was prepared from)."""
        return self._run.config if self._run is not None else kernel_config(self.config, self.specs)

    @property
    def prepared(self) -> PreparedRun:
        """The arena's one preparation (config, game, params; a fork starts from it)."""
        return self._started().prepared

    @property
    def uses_tools(self) -> bool:
        return not self.no_talk and any(s.external for s in self.specs)

    @property
    def waits(self) -> bool:
        """Whether a tick can wait on anyone: a code, HTTP or LLM player, an HTTP or LLM
        governance agent (``tick()`` then runs on an event loop; a server awaits ``atick``)."""
        return waits_on(self.specs, self.governor)

    def interrupting(self) -> AbstractContextManager[None]:
        """While the block runs (the owner's close or delete), a tick in flight stops waiting on
        its players and its discussion (:mod:`~bdpd_jax.host.live.interrupt`)."""
        return self._run.interrupt.holding() if self._run is not None else nullcontext()

    def start(self) -> None:
        """Build the game, the bus, the pact registry and the agents (one ArenaRun); write meta.json."""
        if self.status != "waiting":
            raise ValueError(f"status: only a waiting arena starts, this one is {self.status!r}")
        n, m = len(self._joined), self.config.model
        if not m.min_players <= n <= m.max_players:
            raise ValueError(f"players: {n} joined, outside [minPlayers={m.min_players}, maxPlayers={m.max_players}]")
        external = np.asarray([s.external for s in self._joined], bool)
        prepared = prepare_live(
            kernel_config(self.config, self._joined),
            external,
            uses_tools=self.uses_tools,
            pact_slots=self.pact_slots,
            generator=self.generator,
            perturbable=self.perturbable,
            max_turns=int(self.turns or m.max_turns),
        )
        self._callers.ensure_client(self._joined, len(self._joined))
        if self.governor is not None:
            self.governor.start(self._callers.client, self.operator, self.llm)
        self._run = ArenaRun.begin(
            arena_id=self.arena_id,
            prepared=prepared,
            specs=self._joined,
            shown_kinds=self._shown_kinds,
            no_talk=self.no_talk,
            seed=self.seed,
            arena_index=self.arena_index,
            agents=[self._callers.agent(s) for s in self._joined],
            keep_records=self.keep_records,
            governor=self.governor,
            llm=self.llm,
        )
        if self.out_dir is not None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            clean_stale_tmp(self.out_dir)
            self._run.write_to(JsonlWriter(self.out_dir / "turns.jsonl", fsync=self.fsync))
            atomic_write_json(self.out_dir / "meta.json", self.meta(), mkdir=False)
        self.status = "running"

    def meta(self) -> dict[str, Any]:
        """meta.json: everything replay needs (config, seed, players, switches) and the status.
        Once started, the config, generator, pact slots, perturbable and max turns are those of
        its PreparedRun (before: the config as given, for the owner's view of a waiting arena)."""
        prep = self._run.prepared if self._run is not None else None
        live = prep.live if prep is not None else None
        return {
            **(
                prep.meta(batch=False)
                if prep is not None
                else {"config": self.config.model_dump(mode="json", exclude={"players"})}
            ),
            "arenaId": self.arena_id,
            "status": self.status if self.status != "waiting" else "running",
            "createdAt": self._run.created if self._run is not None else utc_now(),
            "seed": self.seed,
            "arenaIndex": self.arena_index,
            "noTalk": self.no_talk,
            "pactSlots": live.pact_slots if live is not None else self.pact_slots,
            "generator": prep.generator if prep is not None else self.generator,
            "turns": self.turns,
            "perturbable": live.perturbable if live is not None else self.perturbable,
            "llmCache": self.llm.llm_cache,
            "tokenBudget": self.llm.token_budget,
            "maxTurns": self.max_turns,
            "players": [s.public() for s in self.specs],  # the live players (kinds, endpoints redacted)
            "turnsPlayed": self.turn,
            **({"governanceAgent": self.governor.spec.public()} if self.governor is not None else {}),
        }

    def resume(
        self,
        specs: dict[str, LivePlayerConfig],
        out_dir: str | Path,
        governance_agent: GovernorSpec | dict | None = None,
    ) -> None:
        """After a replay (:func:`~bdpd_jax.host.live.replay.replay`): the players named in ``specs``
        (external specs) play live again, each with a fresh agent, as does ``governance_agent``
        (given exactly when the arena had one), and the next turns are appended to
        ``out_dir``/turns.jsonl (a torn last line is dropped first)."""
        run = self._started()
        self.llm.use_folder(out_dir)  # the resumed LLM players' cache, in the folder written to
        self._callers.ensure_client(list(specs.values()), len(run.specs))
        for i, s in enumerate(run.specs):
            if s.name in specs:
                run.replace_player(i, specs[s.name], self._callers.agent(specs[s.name]))
        if governance_agent is not None:
            c = self._callers.client
            self.governor.reattach(governance_agent, c, self.operator, float(self.config.agent_timeout), self.llm)
        self.out_dir = Path(out_dir)
        run.write_to(JsonlWriter(self.out_dir / "turns.jsonl", fsync=self.fsync))  # repairs a torn tail
        self._alone = None  # its batch again: live players may wait where the replay's scripts did not

    # -- batches ----------------------------------------------------------------------------
    @staticmethod
    def lockstep(arenas: list[Arena], width: int | None = None) -> LockstepBatch:
        """One :class:`LockstepBatch` of ``arenas`` (a waiting one is started first; all must
        be running); ``width`` pads it (see LockstepBatch). The batch holds no state: each
        arena keeps its own (``state``) and goes on from it, at its own turn."""
        if not arenas:
            raise ValueError("arenas: need at least one arena")
        for a in arenas:
            if a.status == "waiting":
                a.start()
            if a.status != "running":
                raise ValueError(f"status: arena {a.arena_id!r} is {a.status!r}")
        return LockstepBatch([a._started() for a in arenas], width)

    #: the server's auto-tick groups (arenas at different turns): the same call
    regroup = lockstep

    def _solo(self) -> LockstepBatch:
        """The batch of this arena alone (its keys, params and programs; made once)."""
        if self._alone is None:
            self._alone = Arena.lockstep([self])
        return self._alone

    # -- tools ------------------------------------------------------------------------------
    def dispatch(self, player: str, action: Any, turn: int | None = None) -> dict[str, Any]:
        """Run one tool action of ``player`` at ``turn`` (default: the next turn to play).

        Returns ``{ok, scope, ...}``; an invalid action returns ``ok: false`` with a
        ``reason`` and changes nothing. Called between ticks (an owner acting for a player),
        a pact write goes straight into the kernel state, so the next turn sees it."""
        if self.status != "running":
            raise ValueError(f"status: tools act in a running arena, this one is {self.status!r}")
        run = self._started()
        out = dispatch_tool(run, player, action, turn)
        if not run.in_tick:  # an owner action between ticks: logged so replay repeats it
            run.log_event("ownerAction", {"turn": run.turn + 1, "atTurn": turn, "playerId": player, "action": action})
        return out  # (a pact write between ticks went straight into the run's kernel state)

    def add_sanction_intent(self, player: str, target: str, reason: str | None) -> None:
        """Record ``player``'s ``sanction(target, reason)`` call of this turn (``ArenaRun``)."""
        self._started().add_sanction_intent(player, target, reason)

    # -- owner-fired perturbations (004_* A.2 POST /perturb) ---------------------------------
    def perturb(self, spec: str | dict) -> dict[str, Any]:
        """Fire a perturbation now (a spec id of the config, or an ad-hoc Table A.1 spec)
        through ``kernels.perturb.apply_perturbation``; logged in the next turn record
        (``ownerPerturbations``) so replay fires it again (docs/semantics.md §13)."""
        if self.status != "running" or self._started().in_tick:
            raise ValueError(f"status: perturbations are fired between ticks of a running arena ({self.status!r})")
        run = self._started()
        if run.done:
            raise ValueError("status: the game is over")
        spec, slot = owner_slot(run, self.kernel_config(), spec)
        return fire_perturbation(run, spec, slot)

    # -- running ----------------------------------------------------------------------------
    async def atick(self, offload: Offload = inline, *, start_waiting: bool = True) -> dict[str, Any] | None:
        """Play one turn; returns its record (None once the game is over). The kernel work goes
        through ``offload`` (:mod:`~bdpd_jax.host.live.sync_loop`; the server's runs it in a worker).

        The tick's one status check: a running arena plays; a waiting one is started first
        (``start_waiting=False``: refused, as the server's tick is); any other is refused,
        ``ValueError("status: ...")``. A game that is over plays no turn (its batch skips it)."""
        if self.status != "running":
            if self.status != "waiting" or not start_waiting:
                raise ValueError(f"status: the arena is {self.status!r}, a tick needs 'running'")
            await offload(self.start)
        run = self._started()
        before = run.turn
        batch = self._alone if self._alone is not None else await offload(self._solo)
        await batch.tick(offload)
        return run.records[-1] if run.turn != before else None

    def tick(self) -> dict[str, Any] | None:
        """``atick`` run to its end (:class:`~bdpd_jax.host.live.sync_loop.SyncLoop`: no event loop
        when no one can be waited on)."""
        return self._loop.drive(self.atick(), self.waits)

    async def arun(self, max_ticks: int | None = None) -> dict[str, Any]:
        """Tick until the game is over (or ``max_ticks``); then close. Returns the summary."""
        if self.status == "waiting":
            self.start()
        return await run_to_end(self, max_ticks)

    def run(self, max_ticks: int | None = None) -> dict[str, Any]:
        return self._loop.drive(self.arun(max_ticks), self.waits)

    # -- closing ----------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """The post-game report (summary.json, :func:`~bdpd_jax.host.live.records.summary`)."""
        st = self.state
        return summary(self._started(), st, self.status)

    async def aclose(self, offload: Offload = inline) -> dict[str, Any]:
        """Close: summary.json and meta.json written atomically (through ``offload``); the
        clients are closed."""
        if self.status == "closed":
            return await offload(self.summary)
        if self.status == "waiting":
            raise ValueError("status: the arena never started")
        self.status = "closed"
        summ = await offload(self._write_closed)
        await self._callers.aclose(self._started().agents, self.governor)
        return summ

    def _write_closed(self) -> dict[str, Any]:
        """The closed arena's summary, written with its meta.json; the run's files closed."""
        summ = self.summary()
        if self.out_dir is not None:
            atomic_write_json(self.out_dir / "summary.json", summ, mkdir=False)
            closed = {**self.meta(), "closedAt": utc_now(), **self.llm.calls_report(self._started())}
            atomic_write_json(self.out_dir / "meta.json", closed, mkdir=False)
        self._started().close_writer()
        return summ

    def close(self) -> dict[str, Any]:
        out = self._loop.drive(self.aclose(), self.waits)
        self._loop.close()
        return out


__all__ = ["Arena", "SyncLoop", "TOOL_SCOPES"]
