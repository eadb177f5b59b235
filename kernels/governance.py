"""The governance layer: pacts, scripted talk and sanctions as one turn ``Layer``.

Start of turn (``prewrite``, before the perturbations' begin): the scripted talk of
kernels/talk.py writes proposals, acceptances and pledges into the pact table. Decide side
(``act``, after the policies and before the harvest): it clips the requests of complying
players and fills their announcements. End of turn
(``after_harvest``): the violation check of kernels/pacts.py, then every sanction spec
whose ``pact_violation`` trigger matches fires once per violation (kernels/sanctions.py),
deducting from the violator's wealth, every amount times ``GovState.scale`` (1 unless a
governance agent scaled the ladders, kernels/governance_agent.py). The over-usage counts are
the turn's tally, with or without this layer (kernels/sustainability.py).

Dynamic numbers: ``params.extra["governance"]`` (:class:`GovParams`); state:
``state.extra["governance"]`` (:class:`GovState`); per-turn output:
``record.extra["governance"]["end"]`` with ``violated`` bool[P, N] (the event table the host turns
into ``{partyId, pactId, termType}`` lists), ``ordinal`` int32[P, N], ``fired`` int32[N],
``spec_fired`` / ``spec_amount`` [K, P, N] (which sanction spec charged what for which event:
the sanction rows' provenance), ``status`` int32[P] and the frame columns ``turn_extra`` /
``player_extra``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from . import pacts as P
from . import sanctions as S
from . import talk as T
from . import unroll
from .actions import Actions
from .barrier import materialize
from .bounds import MAX_MAGNITUDE
from .layers import Layer
from .state import still_playing

NAME = "governance"


class GovParams(eqx.Module):
    talk: T.TalkParams
    sanctions: S.SanctionParams
    pacts0: P.Pacts  # the table before turn 1 (pre-declared pacts of the config)


class GovState(eqx.Module):
    pacts: P.Pacts
    # [T][N] of int32[] (sanctions.Table), int32[T, N] above unroll.MAX_PLAYERS:
    # violations so far per (termType, player)
    prior: tuple | jax.Array
    scale: jax.Array  # float[], factor on every sanction spec's amounts (a regulator's ladder_scale; 1 without one)


@dataclass(frozen=True)
class GovernanceLayer(Layer):
    """Static part: whether scripted pledges/proposals exist (skips the registry writes) and
    the term types it was built with (a type registered later makes a new program)."""

    name: str = NAME
    # talk announces, sanctions fine: no strategy is ever switched (kernels/stored.py)
    changes: ClassVar[tuple[str, ...] | None] = ("announced", "sanction", "sanctioned")
    registry: bool = True
    scripted: tuple | None = None  # players with a scripted pledge or proposal (None = all)
    terms: tuple[str, ...] = ()  # P.term_names() at build: part of the compile key

    def init(self, game, params):
        gp: GovParams = params.extra[NAME]
        dt = params.players.wealth0.dtype
        n = game.n_players
        return GovState(
            pacts=gp.pacts0,
            prior=(
                tuple(tuple(jnp.zeros((), jnp.int32) for _ in range(n)) for _ in P.term_names())
                if unroll.players(n)
                else jnp.zeros((len(P.term_names()), n), jnp.int32)
            ),
            scale=jnp.ones((), dt),
        )

    def prewrite(self, game, key, turn, state, params):
        """Steps 1-3 of every player's script (kernels/talk.py): answers, pledges and
        proposals of this turn, written into the table; an arena whose game has ended keeps
        its table."""
        if not self.registry:
            return state
        gs: GovState = state.extra[NAME]
        live = still_playing(state, params)
        new = T.registry_writes(params.extra[NAME].talk, gs.pacts, turn, self.scripted)
        pk = jax.tree_util.tree_map(lambda a, b: jnp.where(live, a, b), new, gs.pacts)
        return dataclasses.replace(state, extra={**state.extra, NAME: dataclasses.replace(gs, pacts=pk)})

    def busy(self, game, turn, state, params):
        if not self.registry:
            return jnp.zeros((), bool)
        return T.registry_busy(params.extra[NAME].talk, state.extra[NAME].pacts, turn)

    def act(self, game, key, turn, state, actions: Actions, params):
        """Steps 4-5: complying players clip their requests, announcers announce."""
        gp: GovParams = params.extra[NAME]
        gs: GovState = state.extra[NAME]
        req, ann = T.comply_announce(gp.talk, gs.pacts, actions.requests, state.last_actual, turn)
        announced = jnp.where(jnp.isnan(ann), actions.announced, ann)
        return state, Actions(requests=req, announced=announced)

    def after_harvest(self, game, key, turn, state, ctx, params):
        gp: GovParams = params.extra[NAME]
        gs: GovState = state.extra[NAME]
        n = game.n_players
        # computed once, not once per (slot, player) in the check and the ladder (kernels/barrier.py)
        actual = materialize(ctx["actual"])
        playing = jnp.ones((n,), bool)
        pk, violated = P.check(gs.pacts, actual, playing)
        count = S.counts(violated, pk.term, len(P.term_names()))
        if isinstance(gs.prior, tuple):
            prior = tuple(tuple(a + count[t][i] for i, a in enumerate(row)) for t, row in enumerate(gs.prior))
        else:  # many players: int32[T, N] (kernels/unroll.py)
            prior = gs.prior + count
        amount, fired, _ = S.amounts(gp.sanctions, gs.prior, count)
        # read by wealth, the sanction column and the metrics; clamped so no amount is ever non-finite
        amount = materialize(jnp.minimum(amount * gs.scale, MAX_MAGNITUDE))
        k, _ = S.ordinals(S.table(gs.prior), violated, pk.term, len(P.term_names()))  # the record's event ordinals
        new_gs = GovState(
            pacts=pk,
            prior=prior,
            scale=gs.scale,
        )
        # the wealth floor (docs/semantics.md §11): a deduction takes at most what the player holds
        taken = jnp.minimum(amount, jnp.maximum(state.wealth, 0.0))
        state = dataclasses.replace(state, wealth=state.wealth - taken, extra={**state.extra, NAME: new_gs})
        ctx = {
            **ctx,
            "sanction": ctx["sanction"] + taken,
            "sanctioned": ctx.get("sanctioned", jnp.zeros((n,), bool)) | (fired > 0),
            # for the governance plugins (kernels/plugins.py); unused (and not computed) without them
            "violators": jnp.any(violated, axis=0),
            "against": jnp.any(violated[:, :, None] & pk.parties[:, None, :], axis=0) & ~jnp.eye(n, dtype=bool),
        }
        n_viol = jnp.sum(violated, axis=0).astype(jnp.int32)
        spec_fired, spec_amount = S.event_amounts(gp.sanctions, k, pk.term)  # provenance (record only)
        spec_amount = jnp.minimum(spec_amount * gs.scale, MAX_MAGNITUDE)
        record = {
            "violated": violated,
            "ordinal": k,
            "fired": fired,
            "spec_fired": spec_fired,  # bool[K, P, N]: spec k fired on the event (slot p, player n)
            "spec_amount": spec_amount,  # float[K, P, N]: what it charged
            "status": pk.status,
            "term": pk.term,
            "turn_extra": {
                "violations": jnp.sum(n_viol),
                "sanctions_fired": jnp.sum(fired),
                "pacts_active": jnp.sum(pk.status == P.ACTIVE).astype(jnp.int32),
                "pacts_dropped": pk.dropped,
                "pacts_invalid": pk.invalid,
            },
            "player_extra": {"violations": n_viol},
        }
        return state, ctx, record
