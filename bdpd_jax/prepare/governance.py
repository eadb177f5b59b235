"""From the validated config's governance keys (talk, pacts, sanction specs) to the
governance layer and its params pytree (kernels/governance.py)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from ..config.governance import needed_slots, player_index
from ..config.perturbations import SANCTION_TYPES
from ..kernels import pacts as P
from ..kernels import sanctions as S
from ..kernels import talk as T
from ..kernels.governance import GovernanceLayer, GovParams
from ..kernels.params import farr


def sanction_specs(config) -> list:
    return [s for s in config.perturbations if getattr(s, "type", None) in SANCTION_TYPES]


def uses_governance(config, specs: list | None = None) -> bool:
    """True when the config has talk, pacts, sanction specs or plugins (the plugins read its
    violations and the GovSim totals its harvest sums; else no layer: zero cost). ``specs``:
    its sanction specs when the caller has them."""
    return bool(
        config.pacts
        or (sanction_specs(config) if specs is None else specs)
        or getattr(config, "plugins", None)
        or any(p.talk is not None for p in config.require_players())
    )


def governance_shapes(configs) -> dict | None:
    """The governance layer's static shapes that fit every config of ``configs`` (the
    largest pact table, sanction ladder and spec count), so all of them run as one program;
    None when none of them uses governance."""
    specs = [sanction_specs(c) for c in configs]
    if not any(uses_governance(c, s) for c, s in zip(configs, specs, strict=True)):
        return None
    return {
        "pact_slots": max(needed_slots(c) for c in configs),
        "ladder_width": max([1] + [len(x.ladder) for s in specs for x in s]),
        "n_specs": max(len(s) for s in specs),
    }


def talk_params(talks: list, names: list[str]) -> T.TalkParams:
    """The scripted talk of each player (``players[i].talk``, None for none) as TalkParams."""
    n = len(talks)
    col = lambda f, d: [f(t) if t is not None else d for t in talks]  # noqa: E731
    parties = np.zeros((n, n), bool)
    term = []
    for i, t in enumerate(talks):
        if t is not None and t.propose is not None:
            for j, r in enumerate(t.propose.parties):
                parties[i, player_index(r, names, f"players[{i}].talk.propose.parties[{j}]")] = True
        term.append(P.term_code(t.propose.terms.type) if t is not None and t.propose is not None else 0)
    prop = lambda f: col(lambda t: f(t.propose) if t.propose is not None else 0.0, 0.0)  # noqa: E731
    return T.TalkParams(
        announce=jnp.asarray(col(lambda t: t.announce != "none", False), bool),
        bias=farr(col(lambda t: t.bias if t.announce == "biased" else 0.0, 0.0)),
        comply=jnp.asarray(col(lambda t: t.comply, False), bool),
        pledge_turn=jnp.asarray(col(lambda t: t.pledge.turn if t.pledge else 0, 0), jnp.int32),
        pledge_cap=farr(col(lambda t: t.pledge.max_harvest if t.pledge else 0.0, 0.0)),
        propose_turn=jnp.asarray(prop(lambda q: q.turn), jnp.int32),
        propose_parties=jnp.asarray(parties),
        propose_term=jnp.asarray(term, jnp.int32),
        propose_cap=farr(prop(lambda q: q.terms.numbers()[0])),
        propose_tolerance=farr(prop(lambda q: q.terms.numbers()[1])),
        accept_rule=jnp.asarray(col(lambda t: T.ACCEPT_RULES.index(t.accept), 0), jnp.int32),
        accept_min=farr(col(lambda t: t.accept_min_cap, 0.0)),
        decline_rejects=jnp.asarray(col(lambda t: t.decline_rejects, True), bool),
    )


def governance(
    config,
    *,
    pact_slots: int | None = None,
    ladder_width: int | None = None,
    n_specs: int | None = None,
    registry: bool = False,
    external: tuple[bool, ...] | None = None,
    specs: list | None = None,
) -> tuple[GovernanceLayer, GovParams]:
    """The layer (static) and its params. pact_slots / ladder_width / n_specs fix the static
    shapes (e.g. the largest of a sweep, so every cell shares one compiled program).
    pact_slots counts the players' slots; each governance agent's reserved slot comes after
    them (status ``inactive``, binding no one until the regulator imposes its cap).
    A live arena's options: ``registry`` takes proposals at any turn (external players talk
    through tools); ``external`` bool[N] marks players asked from outside, whose answers to
    proposals come from their ``accept_pact`` calls, so the kernel's scripted answer for them
    neither accepts nor rejects. ``specs``: the sanction specs when the caller has them."""
    from ..config.plugins import reserved_slots

    players = config.require_players()
    names = [p.name for p in players]
    n = len(players)
    slots = max(needed_slots(config), 1) if pact_slots is None else int(pact_slots)
    if slots < 1:
        raise ValueError(f"pact_slots: must be >= 1, got {pact_slots!r}")
    specs = sanction_specs(config) if specs is None else specs
    width = max([1] + [len(s.ladder) for s in specs]) if ladder_width is None else int(ladder_width)
    if any(len(s.ladder) > width for s in specs):
        raise ValueError(f"ladder_width: {ladder_width} is shorter than a ladder of the config")
    k = len(specs) if n_specs is None else int(n_specs)
    if k < len(specs):
        raise ValueError(f"n_specs: {n_specs} is fewer than the {len(specs)} sanction specs of the config")

    talks = [p.talk for p in players]
    tp = talk_params(talks, names)
    if external is not None and any(external):
        ext = jnp.asarray(external, bool)
        tp = dataclasses.replace(
            tp,
            accept_rule=jnp.where(ext, T.NEVER, tp.accept_rule).astype(jnp.int32),
            decline_rejects=tp.decline_rejects & ~ext,
        )

    # sanctions, padded to (k, width)
    ladder = np.zeros((k, width))
    length = np.ones((k,), np.int32)
    sterm = np.full((k,), S.ANY_TERM, np.int32)
    active = np.zeros((k,), bool)
    for j, s in enumerate(specs):
        ladder[j, : len(s.ladder)] = s.ladder
        length[j] = len(s.ladder)
        sterm[j] = S.ANY_TERM if s.trigger.term_type is None else P.term_code(s.trigger.term_type)
        active[j] = True
    sp = S.SanctionParams(jnp.asarray(active), jnp.asarray(sterm), farr(ladder), jnp.asarray(length))

    # pre-declared pacts: proposed at turn 0, accepted at turn 0 when declared active
    reserved = reserved_slots(config)
    pk = P.empty(slots + reserved, n)
    if len(config.pacts) > slots:
        raise ValueError(f"pact_slots: {slots} slots cannot hold the {len(config.pacts)} pacts of the config")
    for i, pc in enumerate(config.pacts):
        mask = np.zeros((n,), bool)
        for j, r in enumerate(pc.parties):
            mask[player_index(r, names, f"pacts[{i}].parties[{j}]")] = True
        proposer = (
            player_index(pc.proposer, names, f"pacts[{i}].proposer")
            if pc.proposer is not None
            else int(np.argmax(mask))
        )
        max_harvest, tolerance = pc.terms.numbers()
        pk, _ = P.propose(
            pk, proposer, jnp.asarray(mask), P.term_code(pc.terms.type), max_harvest, tolerance, jnp.int32(0)
        )
        if pc.status == "active":
            pk = P.accept_mask(pk, pk.parties & (jnp.arange(slots + reserved) == i)[:, None], jnp.int32(0))
    if reserved:  # the regulators' slots: a harvest_cap on all, inactive, never taken by a proposal
        tail = jnp.arange(slots + reserved) >= slots
        pk = P.Pacts(
            term=jnp.where(tail, P.HARVEST_CAP, pk.term),
            parties=pk.parties | tail[:, None],
            proposer=jnp.where(tail, -1, pk.proposer),
            accepted=pk.accepted | tail[:, None],
            max_harvest=pk.max_harvest,
            tolerance=pk.tolerance,
            status=jnp.where(tail, P.INACTIVE, pk.status),
            proposed_turn=pk.proposed_turn,
            accepted_turn=pk.accepted_turn,
            violation_count=pk.violation_count,
            dropped=pk.dropped,
            invalid=pk.invalid,
        )
    scripted = any(t is not None and (t.pledge is not None or t.propose is not None) for t in talks)
    proposing = scripted or any(pc.status == "proposed" for pc in config.pacts)
    who = tuple(i for i, t in enumerate(talks) if t is not None and (t.pledge is not None or t.propose is not None))
    layer = GovernanceLayer(registry=proposing or registry, scripted=who, terms=P.term_names())
    return layer, GovParams(talk=tp, sanctions=sp, pacts0=pk)


def stack_batch(params_list: list, repeat: int = 1):
    """Params of several cells (same game, same shapes) -> one batch with a trailing axis,
    each cell repeated ``repeat`` times (cell-major): a whole sweep in one compiled program."""
    return jax.tree_util.tree_map(
        lambda *xs: jnp.repeat(jnp.stack([jnp.asarray(x) for x in xs], axis=-1), repeat, axis=-1), *params_list
    )
