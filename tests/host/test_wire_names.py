"""The host's wire models (HTTP bodies, players, the operator's file, the governance agent):
snake_case attributes in Python, the seed's camelCase keys on the wire (requests, responses,
``/openapi.json``), through the config models' one alias mechanism (bdpd_jax/config/base.py)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from server_helpers import keys_of, payload

from bdpd_jax.config.base import ConfigModel, wire_names
from bdpd_jax.host.live.governance_agent import GovernorSpec
from bdpd_jax.host.live.operator import LLMCredential, LLMEndpoint, Operator
from bdpd_jax.host.live.players import LivePlayerConfig
from bdpd_jax.host.server import create_app
from bdpd_jax.host.server import models as M

WIRE_MODELS: list[type[ConfigModel]] = [
    *(v for v in vars(M).values() if isinstance(v, type) and issubclass(v, ConfigModel) and v.__module__ == M.__name__),
    LivePlayerConfig,
    GovernorSpec,
    LLMCredential,
    LLMEndpoint,
    Operator,
]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with TestClient(create_app(tmp_path_factory.mktemp("arenas"))) as c:
        yield c


def test_wire_models_are_config_models_with_snake_case_fields():
    assert len(WIRE_MODELS) > 25 and {M.CreateArena, M.Created, M.OwnerView, M.Summary} <= set(WIRE_MODELS)
    for model in WIRE_MODELS:
        assert issubclass(model, ConfigModel), model
        for name in model.model_fields:
            assert re.fullmatch(r"[a-z][a-z0-9_]*", name), (model.__name__, name)
    assert "arenaId" in wire_names(M.Created) and "tickIntervalMs" in wire_names(M.StartArena)
    assert wire_names(LivePlayerConfig)[:3] == ["agentType", "displayName", "privateResource"]


def test_camel_case_requests_give_camel_case_responses(client):
    r = client.post("/api/arenas", json={**payload(), "agentTimeout": 5000, "noTalk": True, "pactSlots": 4})
    assert r.status_code == 200, r.text
    created = r.json()
    assert set(created) == {
        "arenaId",
        "ownerKey",
        "arenaKey",
        "spectatorToken",
        "seed",
        "status",
        "spectatorPrivateText",
    }
    aid, (owner, akey, _) = created["arenaId"], keys_of(created)
    spec = {"agentType": "builtin", "displayName": "late", "privateResource": 12, "reductionFactor": 0.5}
    joined = client.post(f"/api/arenas/{aid}/join", headers=akey, json=spec)
    assert joined.status_code == 200, joined.text
    assert set(joined.json()) == {"playerId", "players"} and joined.json()["playerId"] == "late"
    started = client.post(f"/api/arenas/{aid}/start", headers=owner, json={"tickMode": "manual", "tickIntervalMs": 0})
    assert started.status_code == 200, started.text
    assert {"arenaId", "engineMode", "maxTurns", "stockLabel", "tickMode"} <= set(started.json())
    ticked = client.post(f"/api/arenas/{aid}/tick", headers=owner).json()
    assert {"arenaId", "engineMode", "maxTurns", "tick"} <= set(ticked)
    view = client.get(f"/api/arenas/{aid}/owner", headers=owner).json()
    assert {"arenaId", "engineMode", "maxTurns", "stockLabel", "lastTick"} <= set(view)
    assert view["players"][-1] == {"playerId": "late", "agentType": "builtin", "kindLabel": "built-in"}
    assert not any("_" in k for k in (*created, *joined.json(), *started.json(), *view))
    summary = client.post(f"/api/arenas/{aid}/close", headers=owner).json()
    assert {"arenaId", "turnsPlayed"} <= set(summary) and "turns_played" not in summary


def test_camel_case_errors_name_the_wire_field(client):
    r = client.post("/api/arenas", json={**payload(), "pactSlots": "x"})
    assert r.status_code == 422 and r.json()["detail"].startswith("pactSlots"), r.text
    created = client.post("/api/arenas", json=payload()).json()
    _, akey, _ = keys_of(created)
    bad = client.post(
        f"/api/arenas/{created['arenaId']}/join",
        headers=akey,
        json={"agentType": "http", "url": "http://agent.example", "rulesText": "x"},
    )
    assert bad.status_code in (400, 422) and "rulesText" in bad.json()["detail"], bad.text
    bad = LivePlayerConfig.model_validate({"agentType": "builtin", "privateResource": 1}).model_dump()
    assert "privateResource" in bad and "name" in bad and "private_resource" not in bad


def test_openapi_property_names_are_camel_case(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for model in WIRE_MODELS:
        schema = schemas.get(model.__name__)
        if schema is None:  # not in an HTTP body (the operator's file)
            continue
        props = set(schema.get("properties", {}))
        assert props <= set(wire_names(model)), (model.__name__, props - set(wire_names(model)))
        assert not any("_" in p for p in props), (model.__name__, props)
    assert {"noTalk", "pactSlots", "agentTimeout", "governanceAgent"} <= set(schemas["CreateArena"]["properties"])
    assert {"agentType", "displayName", "strategyCode", "baseUrl"} <= set(schemas["LivePlayerConfig"]["properties"])
    assert {"arenaId", "ownerKey", "spectatorToken"} <= set(schemas["Created"]["properties"])


def test_operator_file_keeps_its_camel_case_keys():
    op = Operator.model_validate(
        {
            "credentials": {"k": {"baseUrl": "https://llm.example/v1", "apiKeyEnv": "K"}},
            "httpUrls": ["http://a.example"],
        }
    )
    assert op.credentials["k"].base_url == "https://llm.example/v1" and op.http_urls == ["http://a.example"]
    assert set(op.model_dump()) == {"credentials", "llmBaseUrls", "httpUrls", "llmEndpoints", "llmCacheDir"}
    with pytest.raises(ValueError, match="apiKey: give apiKeyEnv or apiKey"):
        LLMCredential.model_validate({"baseUrl": "https://llm.example", "apiKeyEnv": "K", "apiKey": "s"})


_VIEW = "arenaId name engineMode stockLabel noShareNote status turn maxTurns players"
#: every wire model's keys as they were before the move onto ConfigModel (the camelCase field
#: names of main before 31aaf7a): the aliases the generator makes must stay exactly these
WIRE_BEFORE: dict[str, str] = {
    "BuiltinPlayer": "strategy name intensity reductionFactor privateResource activeFrom talk",
    "CreateArena": "model observability agentTimeout players pacts perturbations plugins discussion seed noTalk "
    "pactSlots turns perturbable llmCache tokenBudget spectatorPrivateText governanceAgent",  # issues 38, 35
    "Created": "arenaId ownerKey arenaKey spectatorToken seed status spectatorPrivateText",
    "StartArena": "tickMode tickIntervalMs",
    "PerturbSpec": "id type trigger payload",
    "Perturb": "specId spec",
    "Fired": "turn spec type target value",
    "PlayerRow": "playerId agentType kindLabel",  # issue 36: the kind's label
    "PublicView": _VIEW,
    "OwnerView": _VIEW + " stock collapsed meta lastTick pacts messages",
    "ArenaList": "arenas",
    "Joined": "playerId players",
    "Started": _VIEW + " tickMode",
    "Ticked": _VIEW + " tick",
    "HistoryRow": "arenaId status createdAt closedAt turnsPlayed seed name engineMode",
    "HistoryList": "arenas",
    "PerturbationLog": "specs log",
    "Health": "ok ts",
    "Deleted": "deleted",
    "Resume": "players governanceAgent tickMode tickIntervalMs",
    "Summary": "arenaId status turnsPlayed survived collapseTurn finalStock victory players",
    "ErrorBody": "detail",
    "SetTickMode": "tickMode tickIntervalMs",
    "TickModeView": "tickMode tickIntervalMs",
    "PerturbationType": "type description example payloadSchema supported",
    "PerturbationTypes": "types",
    "DashboardPlayer": "playerId agentType kindLabel strategy",  # issue 36
    "DashboardTables": "players messages pacts perturbations sanctions tickMode tickIntervalMs spectatorPrivateText",
    "LivePlayerConfig": "agentType displayName privateResource activeFrom strategy intensity reductionFactor talk "
    "strategyCode "
    "rngSeed url baseUrl model credential apiKeyEnv systemPrompt temperature rulesText fallbackHarvest timeoutMs "
    "architecture answerFormat scenario persona embeddings script",
    "GovernorSpec": "kind url timeoutMs model credential baseUrl systemPrompt temperature script",
    "LLMCredential": "baseUrl apiKeyEnv apiKey models",
    "Operator": "credentials llmBaseUrls httpUrls llmEndpoints llmCacheDir",  # issue 38: the last two
    "LLMEndpoint": "baseUrl maxInFlight requestsPerMinute maxRetries",  # issue 38
}


def test_wire_names_are_the_keys_from_before_the_move():
    """Each model's wire keys, in order, equal its camelCase field names before the move (an
    acronym or a digit that ``to_camel`` spells otherwise would change the wire)."""
    assert {m.__name__: " ".join(wire_names(m)) for m in WIRE_MODELS} == WIRE_BEFORE
