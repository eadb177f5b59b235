"""``PactRegistry``: the host's view of one arena's kernel pact table (001_*).

The kernel arrays (``kernels.pacts.Pacts`` in ``state.extra["governance"].pacts``) are the
only truth about pacts; this class never re-implements a pact rule. It

* names slots with ids derived from the arena seed (``pact_id(seed, arena, slot)``): slots are
  filled in proposal order and never reused, so ids are deterministic and a replay gets the
  same ids;
* writes through the pure kernel functions (``propose``, ``pledge``, ``accept``), jitted
  once, for the tools ``propose_pact`` / ``pledge`` / ``accept_pact`` (host-side checks only
  decide which *error message* to return; the kernel decides what is stored);
* holds the table in ONE place at a time: bound to an owner (:meth:`bind`, the arena's
  :class:`~bdpd_jax.host.live.arena_run.ArenaRun`), it reads and writes the owner's kernel state
  between ticks; within a tick it holds the table the decide phase handed it (:meth:`sync`,
  once per tick), the tools write on it and the step phase takes it, and :meth:`release`
  hands the table back to the owner's (new) state;
* serialises: ``view_for(player)`` (001_* 'Information discipline'), ``compact()`` (001_*
  'Persistence', the per-turn ``turnRecord.pacts``) and ``get(pact_id)`` with the full
  violation log, which the host appends from each turn's ``violated`` events.
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import orjson

from bdpd_jax.config.terms import detail, numbers, slot_terms
from bdpd_jax.kernels import pacts as P
from bdpd_jax.results import schema


def pact_id(seed: int | str, arena: int, slot: int) -> str:
    """Deterministic UUID (version-4 layout) of pact slot ``slot`` of an arena."""
    digest = hashlib.sha256(f"bdpd-pact:{seed}:{arena}:{slot}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def num(x: Any) -> float | None:
    """A kernel float as the shortest Python float that round-trips to the same value
    (float32 2.1 -> 2.1, not 2.0999999046...); NaN / inf -> None."""
    v = np.asarray(x)[()]
    if not np.isfinite(v):
        return None
    if v.dtype == np.float32:
        return float(np.format_float_positional(np.float32(v), unique=True, trim="-"))
    return float(v)


def nums(x: Any) -> Any:
    """:func:`num` of every element of an array, as (nested) lists, in one pass: orjson writes
    float32 values as their shortest round-trip decimal and non-finite ones as null, which is
    ``num``'s rule (~400x faster than calling ``num`` per element; tested equal)."""
    a = np.asarray(x)
    if a.ndim == 0:
        return num(a)
    if a.dtype != np.float32:
        a = a.astype(np.float64)
    return orjson.loads(orjson.dumps(np.ascontiguousarray(a), option=orjson.OPT_SERIALIZE_NUMPY))


# Jitted once per term registry (the static first argument: a type registered later
# retraces instead of reusing a program that does not know it).
@functools.partial(jax.jit, static_argnums=0)
def _propose(terms, pk, proposer, parties, term, mh, tol, turn):
    return P.propose(pk, proposer, parties, term, mh, tol, turn)


@functools.partial(jax.jit, static_argnums=0)
def _pledge(terms, pk, player, mh, turn):
    return P.pledge(pk, player, mh, turn)


@functools.partial(jax.jit, static_argnums=0)
def _accept(terms, pk, slot, player, turn):
    return P.accept(pk, slot, player, turn)


@functools.partial(jax.jit, static_argnums=0)
def _limits(terms, pk, group_mean):
    return P.limits(pk, P.TurnContext(group_mean=group_mean))


def _np_tree(tree):
    return jax.tree_util.tree_map(np.asarray, tree)


class PactRegistry:
    """Host view over one arena's pact table (numpy copy of the kernel arrays)."""

    def __init__(self, pacts: P.Pacts, players: list[str], seed: int | str, arena: int = 0) -> None:
        self.players = list(players)
        self.seed = seed
        self.arena = int(arena)
        self._table: P.Pacts | None = _np_tree(pacts)  # the table while no owner holds it
        self._read: Callable[[], P.Pacts] | None = None  # the owner's table (its kernel state)
        self._write: Callable[[P.Pacts], None] | None = None
        self.syncs = 0  # kernel -> host adoptions (one per tick; the guard tests count them)
        self._terms: dict[int, dict[str, Any]] = {}  # slot -> terms as submitted (display)
        self._violations: dict[int, list[dict[str, Any]]] = {}

    # -- ids --------------------------------------------------------------------------------
    @property
    def n_slots(self) -> int:
        return int(self.table.status.shape[-1])

    def id_of(self, slot: int) -> str:
        return pact_id(self.seed, self.arena, int(slot))

    def slot_of(self, pid: Any) -> int | None:
        if not isinstance(pid, str):
            return None
        for s in range(self.n_slots):
            if self.table.status[s] != P.EMPTY and self.id_of(s) == pid:
                return s
        return None

    def bind(self, read: Callable[[], P.Pacts], write: Callable[[P.Pacts], None]) -> None:
        """Read and write the table through its owner (the arena's kernel state) from now on."""
        self._read, self._write, self._table = read, write, None

    @property
    def table(self) -> P.Pacts:
        """The pact table: the tick's (after :meth:`sync`) or else the owner's."""
        if self._table is not None or self._read is None:
            return self._table  # type: ignore[return-value]
        return self._read()

    def _put(self, pacts: P.Pacts) -> None:
        """A tool's write: on the tick's table, or between ticks into the owner's state."""
        if self._table is None and self._write is not None:
            self._write(pacts)  # between ticks: straight into the owner's kernel state
        else:
            self._table = pacts

    def sync(self, pacts: P.Pacts) -> None:
        """Adopt the decide phase's table for this tick (the builtins' scripted talk): the tools
        write on it and the step phase takes it. Once per tick."""
        self.syncs += 1
        self._table = _np_tree(pacts)

    def release(self) -> None:
        """The tick is over: the table is the owner's again (its new kernel state)."""
        if self._read is not None:
            self._table = None

    # -- serialisation ----------------------------------------------------------------------
    def terms(self, slot: int) -> dict[str, Any]:
        if slot in self._terms:
            return dict(self._terms[slot])
        stored = {f: num(getattr(self.table, f)[slot]) for f in P.NUMBERS}
        return slot_terms(int(self.table.term[slot]), stored)

    def _base(self, s: int) -> dict[str, Any]:
        tb = self.table
        return {
            "id": self.id_of(s),
            # a governance agent's pact (a reserved slot binding all) has no proposing player
            "proposerId": self.players[int(tb.proposer[s])] if int(tb.proposer[s]) >= 0 else None,
            "parties": [self.players[i] for i in np.flatnonzero(tb.parties[s])],
            "terms": self.terms(s),
            "proposedTurn": int(tb.proposed_turn[s]),
        }

    def status(self, s: int) -> str:
        return P.STATUSES[int(self.table.status[s])]

    def compact(self) -> list[dict[str, Any]]:
        """001_* 'Persistence': every pact of the arena with its running violation count."""
        out = []
        for s in np.flatnonzero(self.table.status != P.EMPTY).tolist():  # slots in order
            st = self.status(s)
            out.append(
                {
                    **self._base(s),
                    "status": st,
                    "acceptedTurn": int(self.table.accepted_turn[s]) if st == "active" else None,
                    "violationCount": int(self.table.violation_count[s]),
                }
            )
        return out

    def view_for(self, player: str) -> dict[str, list[dict[str, Any]]]:
        """001_* 'Information discipline': the pacts ``player`` is a party to, as
        ``{"active": [...], "proposed": [... awaitingYou]}``; rejected pacts are not shown."""
        i = self.players.index(player)
        tb = self.table
        active, proposed = [], []
        for s in np.flatnonzero(tb.parties[:, i]).tolist():  # the slots it is a party to, in order
            st = self.status(s)
            if st == "active":
                active.append({**self._base(s), "acceptedTurn": int(tb.accepted_turn[s])})
            elif st == "proposed":
                proposed.append({**self._base(s), "awaitingYou": bool(not tb.accepted[s, i])})
        return {"active": active, "proposed": proposed}

    def get(self, pid: str) -> dict[str, Any] | None:
        """The full pact (compact fields, acceptances and the whole violation log), or None."""
        s = self.slot_of(pid)
        if s is None:
            return None
        base = next(p for p in self.compact() if p["id"] == pid)
        acc = [self.players[i] for i in np.flatnonzero(self.table.accepted[s] & self.table.parties[s])]
        return {**base, "acceptedBy": acc, "violations": [dict(v) for v in self._violations.get(s, [])]}

    # -- writes (tools) ---------------------------------------------------------------------
    def _jnp(self):
        return jax.tree_util.tree_map(jnp.asarray, self.table)

    def propose(self, proposer: str, parties: list[str], terms: dict[str, Any], turn: int) -> tuple[int, str | None]:
        """Store a proposal through ``kernels.pacts.propose``. -> (slot or -1, reason)."""
        i = self.players.index(proposer)
        mask = np.zeros((len(self.players),), bool)
        for p in parties:
            mask[self.players.index(p)] = True
        code = P.term_code(terms["type"])
        before = int(self.table.dropped)
        mh, tol = numbers(terms)
        pk, slot = _propose(
            P.term_names(), self._jnp(), jnp.int32(i), jnp.asarray(mask), jnp.int32(code), mh, tol, jnp.int32(turn)
        )
        return self._stored(pk, int(slot), terms, before)

    def pledge(self, player: str, max_harvest: float, turn: int) -> tuple[int, str | None]:
        before = int(self.table.dropped)
        pk, slot = _pledge(
            P.term_names(), self._jnp(), jnp.int32(self.players.index(player)), float(max_harvest), jnp.int32(turn)
        )
        return self._stored(pk, int(slot), {"type": "harvest_cap", "maxHarvest": float(max_harvest)}, before)

    def _stored(self, pk, slot: int, terms: dict[str, Any], dropped_before: int) -> tuple[int, str | None]:
        self._put(_np_tree(pk))
        if slot < 0:
            if int(self.table.dropped) > dropped_before:
                return -1, f"pact table full ({self.n_slots} slots)"
            return -1, f"terms: invalid {terms!r}"
        self._terms[slot] = dict(terms)
        return slot, None

    def accept(self, slot: int, player: str, turn: int) -> None:
        self._put(
            _np_tree(
                _accept(
                    P.term_names(), self._jnp(), jnp.int32(slot), jnp.int32(self.players.index(player)), jnp.int32(turn)
                )
            )
        )

    # -- violations -------------------------------------------------------------------------
    def record_violations(
        self, events: dict[str, Any] | None, actual: np.ndarray, sanction_fired: np.ndarray
    ) -> list[dict[str, Any]]:
        """Append this turn's violation events (their decoded columns: results/decode.py's
        ``violation_columns`` of the arena's turn) to the log; return them as wire rows with
        the live-only columns added (001_* ``detail`` strings, ``sanctionFired``)."""
        if events is None or not len(events["pact"]):
            return []
        mean = float(np.mean(actual.astype(np.float64)))
        # each pact's limit as the kernel's check computed it (the term registry's rule)
        lim = np.asarray(_limits(P.term_names(), self._jnp(), jnp.asarray(mean, self.table.max_harvest.dtype)))
        slots, who = np.asarray(events["pact"]), np.asarray(events["player"])
        each = zip(events["term_type"], slots, who, strict=True)
        live = {
            "detail": [detail(k, float(actual[i]), float(lim[s]), mean) for k, s, i in each],
            "sanction_fired": np.asarray(sanction_fired)[who] > 0,
        }
        rows = schema.wire_rows(
            schema.VIOLATIONS, events | live, {"player": self.players.__getitem__, "pact": self.id_of}, nums
        )
        for s, ev in zip(slots, rows, strict=True):
            self._violations.setdefault(int(s), []).append(ev)
        return rows


__all__ = ["PactRegistry", "pact_id", "num", "nums"]
