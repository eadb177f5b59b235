"""The host's wire models (HTTP bodies, players, the operator's file, the governance agent):
snake_case attributes in Python, the seed's camelCase keys on the wire (requests, responses,
``/openapi.json``), through the config models' one alias mechanism (bdpd_jax/config/base.py)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from server_helpers import keys_of, payload

from bdpd_jax.config.base import ConfigModel, wire_names
from bdpd_jax.host.governance_agent import GovernorSpec
from bdpd_jax.host.operator import LLMCredential, Operator
from bdpd_jax.host.players import LivePlayerConfig
from bdpd_jax.host.server import create_app
from bdpd_jax.host.server import models as M

WIRE_MODELS: list[type[ConfigModel]] = [
    *(v for v in vars(M).values() if isinstance(v, type) and issubclass(v, ConfigModel) and v.__module__ == M.__name__),
    LivePlayerConfig,
    GovernorSpec,
    LLMCredential,
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
    assert set(created) == {"arenaId", "ownerKey", "arenaKey", "spectatorToken", "seed", "status"}
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
    assert view["players"][-1] == {"playerId": "late", "agentType": "builtin"}
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
    assert set(op.model_dump()) == {"credentials", "llmBaseUrls", "httpUrls"}
    with pytest.raises(ValueError, match="apiKey: give apiKeyEnv or apiKey"):
        LLMCredential.model_validate({"baseUrl": "https://llm.example", "apiKeyEnv": "K", "apiKey": "s"})
