"""Extension points through the HTTP server (issue 15 item 1): a pact term type and a
perturbation type registered here (one definition and one ``register`` call each), then used
over the API: create an arena whose config names both, a scripted player who proposes the new
term with the ``propose_pact`` tool, manual ticks, an owner-fired perturbation of the new type,
and the records, perturbation log, owner view and report read back. The registries are left
as they were found (the module fixture unregisters both types).
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar, Literal

import jax.numpy as jnp
import pytest
from fastapi.testclient import TestClient
from payloads import SEED_LOGISTIC
from pydantic import BaseModel, ConfigDict, Field
from server_helpers import keys_of

from bdpd_jax.config.perturbations import SPEC_TYPES, ArenaSpec, register_perturbation, unregister_perturbation
from bdpd_jax.host.agents.tools import tool_schemas
from bdpd_jax.host.server import create_app
from bdpd_jax.kernels import pacts as P
from bdpd_jax.kernels import perturb as pk
from bdpd_jax.testing import check_perturbation_type, check_term_type

EPS = 1e-6


# -- a per-player quota: each party harvests at most quota x (1 + grace) ------------------------
def _quota(pacts, ctx):
    return pacts.max_harvest * (1.0 + pacts.tolerance)


# -- stock_set: S <- level ----------------------------------------------------------------------
def _stock_set(game, view, slot, who):
    s = jnp.maximum(slot.value.astype(view.wealth.dtype), 0.0)
    return {"engine_state": game.engine.with_stock(view.engine_state, s)}, s, None


class _Level(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    level: float = Field(ge=0)


class StockSetSpec(ArenaSpec):
    type: Literal["stock_set"]
    example: ClassVar[dict[str, Any]] = {"level": 50.0}
    payload: _Level
    value_field: ClassVar[str | None] = "level"  # stored as the slot's value


@pytest.fixture(scope="module", autouse=True)
def registered():
    """Both types for this module only; unregistered after it (other tests see the registries
    as they were)."""
    before = (P.term_names(), pk.type_names(), set(SPEC_TYPES))
    P.register_term(
        "per_player_quota",
        _quota,
        [
            P.TermField("quota", "max_harvest", 0.0, exclusive=True, description="per party per turn"),
            P.TermField("grace", "tolerance", 0.0, default=0.0, description="allowed excess, a fraction"),
        ],
        detail="harvested {actual:.3f} > quota {limit:.3f}",
        description="each party harvests at most quota x (1 + grace)",
    )
    register_perturbation(
        "stock_set", _stock_set, StockSetSpec, requires="stock", label="stock", description="S <- max(level, 0)"
    )
    yield
    unregister_perturbation("stock_set")
    P.unregister_term("per_player_quota")
    assert (P.term_names(), pk.type_names(), set(SPEC_TYPES)) == before


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with TestClient(create_app(tmp_path_factory.mktemp("arenas"))) as c:
        yield c


SANCTION = {
    "id": "fine",
    "type": "sanction",
    "trigger": {"kind": "pact_violation", "termType": "per_player_quota"},
    "payload": {"amount": 1.0, "reason": "over quota"},
}
RESET = {"id": "reset", "type": "stock_set", "trigger": {"kind": "turn", "turn": 2}, "payload": {"level": 40.0}}
SCRIPT = [
    {
        "harvest": 1.0,
        "actions": [{"tool": "propose_pact", "parties": ["c"], "terms": {"type": "per_player_quota", "quota": 1.2}}],
    },
    {"harvest": 5.0},
    {"harvest": 0.1},
    {"harvest": 0.1},
]


def _body(**extra) -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(maxPlayers=3, minPlayers=2, maxTurns=4)
    cfg["players"] = [{"strategy": "conservative", "privateResource": 30, "name": "c"}]
    return {**cfg, "seed": 7, "perturbations": [SANCTION, RESET], **extra}


def test_create_refuses_bad_numbers_of_the_new_types_naming_the_field(client):
    before = client.get("/api/arenas").json()["arenas"]
    for body, needle in (
        (_body(pacts=[{"parties": [0], "terms": {"type": "per_player_quota", "quota": 0}}]), "terms.quota"),
        (
            _body(pacts=[{"parties": [0], "terms": {"type": "per_player_quota", "quota": 1, "grace": -0.5}}]),
            "terms.grace",
        ),
        (_body(perturbations=[{**RESET, "payload": {"level": -1}}]), "perturbations[0].payload.level"),
    ):
        r = client.post("/api/arenas", json=body)
        assert r.status_code == 400 and needle in r.json()["detail"], r.text
    assert client.get("/api/arenas").json()["arenas"] == before
    # the tools a live player is offered include the new term type and its fields
    terms = tool_schemas()[3]["function"]["parameters"]["properties"]["terms"]
    assert "per_player_quota" in terms["properties"]["type"]["enum"] and "grace" in terms["properties"]


def test_an_arena_uses_both_new_types_over_the_api(client):
    created = client.post("/api/arenas", json=_body())
    assert created.status_code == 200, created.text
    c = created.json()
    aid, (owner, akey, _) = c["arenaId"], keys_of(c)
    joined = client.post(
        f"/api/arenas/{aid}/join",
        headers=akey,
        json={"agentType": "scripted", "name": "s", "privateResource": 20, "script": SCRIPT},
    )
    assert joined.status_code == 200, joined.text
    assert client.post(f"/api/arenas/{aid}/start", headers=owner, json={"tickMode": "manual"}).status_code == 200

    r1 = client.post(f"/api/arenas/{aid}/tick", headers=owner).json()["tick"]
    assert r1["tools"][0]["result"]["ok"], r1["tools"]
    assert [p["terms"] for p in r1["pacts"]] == [{"type": "per_player_quota", "quota": 1.2}]

    r2 = client.post(f"/api/arenas/{aid}/tick", headers=owner).json()["tick"]
    assert r2["pacts"][0]["status"] == "active"  # c (conservative) accepted on turn 2
    # the new perturbation fired at the start of turn 2: the stock was 40 before the harvests
    assert [(f["id"], f["type"], f["target"], f["value"]) for f in r2["perturbations"]] == [
        ("reset", "stock_set", "stock", 40.0)
    ]
    harvested = sum(d["actual"] for d in r2["decisions"])
    assert r2["stock"] == pytest.approx(40.0 - harvested + r2["regen"], rel=1e-5)
    # s took 5 > 1.2 x (1 + 0): a violation of the new term, with its detail string, and the fine
    viol = [v for v in r2["violations"] if v["partyId"] == "s"]
    assert [(v["termType"], v["detail"]) for v in viol] == [("per_player_quota", "harvested 5.000 > quota 1.200")]
    fines = [x for x in r2["sanctions"] if x["playerId"] == "s"]
    assert [(x["specId"], x["termType"], x["amount"], x["reason"]) for x in fines] == [
        ("fine", "per_player_quota", 1.0, "over quota")
    ]
    # c complied: its harvest is within the limit (plain-Python rule)
    c_actual = next(d["actual"] for d in r2["decisions"] if d["playerId"] == "c")
    assert c_actual <= 1.2 + EPS and not [v for v in r2["violations"] if v["partyId"] == "c"]

    # the owner fires the new type ad hoc: applied before turn 3, logged in its record
    fired = client.post(
        f"/api/arenas/{aid}/perturb", headers=owner, json={"type": "stock_set", "payload": {"level": 12.5}}
    )
    assert fired.status_code == 200, fired.text
    assert (fired.json()["type"], fired.json()["target"], fired.json()["value"]) == ("stock_set", "stock", 12.5)
    r3 = client.post(f"/api/arenas/{aid}/tick", headers=owner).json()["tick"]
    assert [(p["type"], p["value"]) for p in r3["ownerPerturbations"]] == [("stock_set", 12.5)]
    assert r3["stock"] == pytest.approx(12.5 - sum(d["actual"] for d in r3["decisions"]) + r3["regen"], rel=1e-5)

    # read back: the perturbation log, the owner view, the report
    log = client.get(f"/api/arenas/{aid}/perturbations", headers=owner).json()
    assert [s["type"] for s in log["specs"]] == ["sanction", "stock_set"]
    assert [(e["turn"], e["type"], e["owner"]) for e in log["log"]] == [(2, "stock_set", False), (3, "stock_set", True)]
    view = client.get(f"/api/arenas/{aid}/owner", headers=owner).json()
    assert [p["terms"]["type"] for p in view["pacts"]] == ["per_player_quota"]
    summary = client.post(f"/api/arenas/{aid}/close", headers=owner).json()
    assert [p["terms"] for p in summary["pacts"]] == [{"type": "per_player_quota", "quota": 1.2}]
    stats = {p["playerId"]: p for p in summary["players"]}
    assert stats["s"]["violations"] == 1 and stats["s"]["sanctions"] == pytest.approx(1.0)


def test_the_registry_contract_holds_for_the_types_registered_here():
    """The public contract checks (bdpd_jax.testing, which tests/test_registry_contract.py runs
    over every registered type) pass for the types registered here."""
    assert "per_player_quota" in P.term_names() and "stock_set" in pk.type_names()
    check_term_type("per_player_quota")
    check_perturbation_type("stock_set")
