"""``ArenaRun``: everything ``Arena.start()`` builds, in one object the arena owns.

It is the ONE owner of the arena's kernel state (``state``: numpy leaves, no batch axis) for
the arena's whole life: a lockstep batch stacks its members' states into one kernel call and
writes each new state back here (stack in, split out); nothing keeps it between ticks. It
holds the arena's one ``PreparedRun`` (config, game, params, spec ids, sanction specs), read
through it, never derived again.

The collaborators of a live arena take it as an explicit input, never the Arena:
:class:`~bdpd_jax.host.live.batch_runner.LockstepBatch` (the turn),
:func:`~bdpd_jax.host.live.dispatch.dispatch_tool` (the tools),
:func:`~bdpd_jax.host.live.records.turn_record` (turn records and the summary's counts),
:func:`~bdpd_jax.host.live.envelope.envelopes` (what an external player decides on),
:func:`~bdpd_jax.host.live.governance_agent.govern` (the owner's governance agent) and
:func:`~bdpd_jax.host.live.owner_perturb.fire_perturbation`. They change it only through its
methods.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
from collections import deque
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.host.agents.tools import ActionBudget
from bdpd_jax.host.live.arena_llm import ArenaLLM
from bdpd_jax.host.live.interrupt import Interrupt
from bdpd_jax.host.live.messages import MessageBus
from bdpd_jax.host.live.persist import JsonlWriter
from bdpd_jax.host.live.players import LivePlayerConfig
from bdpd_jax.host.live.programs import EXTERNAL, has_governance, programs
from bdpd_jax.host.live.registry import PactRegistry
from bdpd_jax.kernels import rng
from bdpd_jax.kernels.game import Game
from bdpd_jax.kernels.governance import NAME as GOV
from bdpd_jax.kernels.params import Params
from bdpd_jax.prepare.prepared import PreparedRun

if TYPE_CHECKING:
    from bdpd_jax.host.live.governance_agent import Governor

#: the per-player counts summary.json reports, each starting at 0
STAT_KEYS: dict[str, float] = {"totalHarvest": 0.0, "fallbacks": 0, "errors": 0, "violations": 0, "sanctions": 0.0}


def utc_now() -> str:
    """Now, as meta.json writes it (``createdAt``, ``closedAt``)."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def waits_on(specs: list[LivePlayerConfig], governor: Governor | None) -> bool:
    """Whether a tick can wait on anyone: a player whose kind waits (code, HTTP, LLM) or a
    governance agent that does (HTTP, LLM); if not, it runs without an event loop."""
    return any(s.waits for s in specs) or (governor is not None and governor.waits)


def shown_kind(spec: LivePlayerConfig, shown_kinds: dict[str, str]) -> str:
    """A player's agentType as records and summary.json show it (the original kind of a
    player that a replay plays from its log)."""
    return shown_kinds.get(spec.player_id, spec.agent_type) if spec.player_kind.stands_in else spec.agent_type


#: owner events between ticks, one line each, beside turns.jsonl (one line per turn)
EVENTS_FILE = "events.jsonl"


@dataclasses.dataclass(eq=False)
class ArenaRun:
    """The running game of one live arena (built once by ``Arena.start``)."""

    arena_id: str
    prepared: PreparedRun  # the one preparation: config, game, params (max_turns the arena's), spec ids
    specs: list[LivePlayerConfig]  # [N] fixed at start (a resume swaps an external player's spec)
    shown_kinds: dict[str, str]  # name -> kind shown for a replayed (scripted) player
    no_talk: bool
    key: jax.Array  # uint32[2] rng.arena_key(seed, arena_index)
    bus: MessageBus
    registry: PactRegistry | None  # None without a governance layer
    agents: list[Any]  # [N] an agent per external player, None for builtins
    created: str  # ISO time of start (meta.json createdAt)
    writer: JsonlWriter | None  # turns.jsonl (None: not persisted)
    records: deque[dict[str, Any]]  # the last keep_records turn records
    keep_records: int | None
    action_budget: ActionBudget = dataclasses.field(default_factory=ActionBudget)
    events: JsonlWriter | None = None  # events.jsonl: owner events between ticks (None: not persisted)
    stats: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)  # name -> STAT_KEYS
    turn: int = 0  # the last turn played
    done: bool = False
    in_tick: bool = False  # a turn is being played (players' own actions)
    announced: dict[str, float] = dataclasses.field(default_factory=dict)  # this turn's announcements
    sanction_intents: dict[tuple[int, int], str | None] = dataclasses.field(default_factory=dict)
    owner_fired: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # before the next record
    governor: Governor | None = None  # the owner's governance agent (Arena starts and closes it)
    # the arena's kernel state, owned here only: its numpy leaves (no batch axis; a batch stacks
    # and splits these) and tree structure; ``state`` is the tree, built when read
    kernel_leaves: list[np.ndarray] = dataclasses.field(default_factory=list)
    kernel_tree: Any = None
    _state: Any = None  # the tree of kernel_leaves, once read
    units: float = 1.0  # stock units per harvest unit (an agent's fallback is scaled by it)
    llm: ArenaLLM | None = None  # the LLM players' tokens and budget (host/live/arena_llm.py)
    interrupt: Interrupt = dataclasses.field(default_factory=Interrupt)  # the owner's close / delete

    def __post_init__(self) -> None:
        self.stats = {s.player_id: dict(STAT_KEYS) for s in self.specs}
        if self.kernel_tree is None:  # the kernel's initial state (the batched program, one arena wide)
            init = programs(self.game)[0]
            one = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[..., None], self.params)
            self.set_state(unbatch(init(one), 0))
        self.units = float(np.asarray(self.game.engine.harvest_unit(self.params.engine), np.float64))
        if self.registry is not None:
            self.registry.bind(self.pacts, self.set_pacts)

    # -- the kernel state (its one owner) ----------------------------------------------------------
    @property
    def state(self) -> Any:
        """The arena's kernel state (numpy leaves, no batch axis)."""
        if self._state is None:
            self._state = self.kernel_tree.unflatten(self.kernel_leaves)
        return self._state

    def set_state(self, state: Any) -> None:
        """Adopt ``state`` (one arena's, numpy leaves, no batch axis) as the arena's kernel state."""
        self.kernel_leaves, self.kernel_tree = jax.tree_util.tree_flatten(state)
        self._state = state

    def set_leaves(self, leaves: list[np.ndarray]) -> None:
        """Adopt new leaves of the same structure (a batch's tick writing its slice back)."""
        self.kernel_leaves, self._state = leaves, None

    def pacts(self) -> Any:
        """The pact table of the kernel state (governance layer only)."""
        return self.state.extra[GOV].pacts

    def set_pacts(self, table: Any) -> None:
        """Write ``table`` into the kernel state (a pact tool used between ticks)."""
        st = self.state
        pacts = jax.tree_util.tree_map(np.asarray, table)
        self.set_state(
            dataclasses.replace(st, extra={**st.extra, GOV: dataclasses.replace(st.extra[GOV], pacts=pacts)})
        )

    @property
    def config(self) -> ArenaConfig:
        """The kernels' config (external players on the placeholder policy)."""
        return self.prepared.config

    @property
    def game(self) -> Game:
        return self.prepared.game

    @property
    def params(self) -> Params:
        """The kernel params (no batch axis), ``max_turns`` the arena's."""
        return self.prepared.params

    @property
    def spec_ids(self) -> tuple[str, ...]:
        """The config's perturbation spec ids, in slot order."""
        return self.prepared.spec_ids

    @property
    def sanction_specs(self) -> tuple[Any, ...]:
        """The config's sanction specs (the record's provenance), listed once per preparation."""
        return self.prepared.sanctions

    @property
    def max_turns(self) -> int:
        """The turn the game ends at (the kernel params' ``max_turns``)."""
        return int(self.params.max_turns)

    @functools.cached_property
    def external_index(self) -> int:
        """The EXTERNAL placeholder's policy index in the game (-1: none)."""
        return self.game.policies.index(EXTERNAL) if EXTERNAL in self.game.policies else -1

    @classmethod
    def begin(
        cls,
        *,
        arena_id: str,
        prepared: PreparedRun,
        specs: list[LivePlayerConfig],
        shown_kinds: dict[str, str],
        no_talk: bool,
        seed: int,
        arena_index: int,
        agents: list[Any],
        keep_records: int | None,
        governor: Governor | None = None,
        llm: ArenaLLM | None = None,
    ) -> ArenaRun:
        """The run state of a game about to play its first turn (``Arena.start``): the arena's
        key, a message bus, a pact registry when the game has a governance layer."""
        players = [s.player_id for s in specs]
        return cls(
            arena_id=arena_id,
            prepared=prepared,
            specs=list(specs),
            shown_kinds=shown_kinds,
            no_talk=no_talk,
            key=rng.arena_key(seed, arena_index),
            bus=MessageBus(seed=f"{seed}:{arena_index}", known_players=players),
            registry=PactRegistry(prepared.params.extra[GOV].pacts0, players, seed, arena_index)
            if has_governance(prepared.game)
            else None,
            agents=agents,
            created=utc_now(),
            writer=None,
            records=deque(maxlen=keep_records),
            keep_records=keep_records,
            governor=governor,
            llm=llm,
        )

    @property
    def players(self) -> list[str]:
        return [s.player_id for s in self.specs]

    @property
    def external(self) -> np.ndarray:
        """bool[N]: the players asked from outside (its PreparedRun's live options)."""
        live = self.prepared.live
        return np.asarray(live.external if live is not None else [False] * len(self.specs), bool)

    @property
    def waits(self) -> bool:
        """Whether its tick can wait on anyone (:func:`waits_on` of its players and governor)."""
        return waits_on(self.specs, self.governor)

    def agent_kind(self, i: int) -> str:
        return shown_kind(self.specs[i], self.shown_kinds)

    # -- within a turn -----------------------------------------------------------------------
    def set_in_tick(self, flag: bool) -> None:
        self.in_tick = flag

    def new_turn(self) -> None:
        """Forget the last turn's announcements (the decide phase of a new turn)."""
        self.announced = {}

    def announce(self, player: str, value: float) -> None:
        self.announced[player] = value

    def add_sanction_intent(self, player: str, target: str, reason: str | None) -> None:
        """Record ``player``'s ``sanction(target, reason)`` call of this turn (several calls on
        one target count once); the step reads and clears them (:meth:`take_sanction_intents`)."""
        players = self.players
        self.sanction_intents[(players.index(player), players.index(target))] = reason

    def take_sanction_intents(self) -> dict[tuple[int, int], str | None]:
        """This turn's (sanctioner, target) -> reason calls, handed over once."""
        out, self.sanction_intents = self.sanction_intents, {}
        return out

    def count(self, player: str, stat: str, amount: float) -> None:
        """Add ``amount`` to one of ``player``'s summary counts (``STAT_KEYS``)."""
        self.stats[player][stat] += amount

    # -- owner events and turn records --------------------------------------------------------
    def log_event(self, event: str, entry: dict[str, Any]) -> None:
        """Append an owner event line (``{"event": ..., "turn": next turn, ...}``) to
        events.jsonl now: state changes made between ticks are on disk before they act, and
        turns.jsonl keeps one line per turn."""
        if self.events is not None:
            self.events.write({"arenaId": self.arena_id, "event": event, **entry})

    def owner_perturbation(self, entry: dict[str, Any]) -> None:
        """An owner-fired perturbation: logged now, listed in the next turn record."""
        self.owner_fired.append(entry)
        self.log_event("ownerPerturbation", entry)

    def take_owner_fired(self) -> list[dict[str, Any]]:
        out, self.owner_fired = self.owner_fired, []
        return out

    def end_turn(self, line: dict[str, Any], ended: bool) -> None:
        """Turn ``line["turn"]`` was played: keep its record (and write it); ``ended``: the
        kernel's ``still_playing`` is False after it (collapsed, or the last turn played)."""
        if self.llm is not None and self.llm.end_turn(self, line):
            ended = True  # the arena's tokenBudget is spent: this turn is its last (line["stopped"])
        t = line["turn"]
        self.turn = t
        self.records.append(line)  # a bounded deque: the oldest record leaves
        if self.keep_records is not None:
            self.bus.forget_before(t - self.keep_records + 1)
        if self.writer is not None:
            self.writer.write(line)
        if ended:
            self.done = True

    def finish(self) -> None:
        """The kernel played no turn: the game is over."""
        self.done = True

    # -- a resumed arena -------------------------------------------------------------------------
    def replace_player(self, i: int, spec: LivePlayerConfig, agent: Any) -> None:
        self.specs[i] = spec
        self.agents[i] = agent

    def write_to(self, writer: JsonlWriter) -> None:
        """Persist to ``writer`` (turns.jsonl) and, beside it, events.jsonl."""
        self.writer = writer
        self.events = JsonlWriter(writer.path.with_name(EVENTS_FILE), fsync=writer.fsync)

    def close_writer(self) -> None:
        for w in (self.writer, self.events):
            if w is not None:
                w.close()


def unbatch(tree: Any, b: int) -> Any:
    """Arena ``b``'s numpy slice of every leaf of a batched tree (batch axis last)."""
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[..., b], tree)


__all__ = ["ArenaRun", "unbatch", "EVENTS_FILE", "STAT_KEYS", "shown_kind", "utc_now", "waits_on"]
