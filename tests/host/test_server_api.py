"""The typed API: models in /openapi.json, one-line errors naming the field and value, a
failed request changes nothing, perturb's three body forms, body limit, CORS, pages served."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from server_helpers import keys_of, payload

from bdpd_jax.host.server import create_app
from bdpd_jax.host.server import models as M


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    app = create_app(tmp_path_factory.mktemp("arenas"), cors=["http://lab.example"], max_body_bytes=64_000)
    with TestClient(app) as c:
        yield c


# A config spec that never fires on its own (turn 99): the arenas that tick here share its Game
DROUGHT = {"id": "drought", "type": "regen_shock", "trigger": {"kind": "turn", "turn": 99}, "payload": {"factor": 0.5}}


def _created(client, **kw):
    r = client.post("/api/arenas", json={**payload(**kw)})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize(
    "body, status, needle",
    [
        ({"noTalk": "false"}, 422, "noTalk"),
        ({"pactSlots": "x"}, 422, "pactSlots: Input should be a valid integer"),
        ({"seed": 2**32}, 422, "seed"),
        ({"seed": -1}, 422, "seed"),
        ({"model": {"engineMode": "nope"}}, 400, "model.engineMode: unknown engine 'nope'"),
        ({"model": {"regenRate": "fast"}}, 422, "model.regenRate"),
        ({"players": [{"strategy": "sneaky"}]}, 400, "sneaky"),
        ({"bogus": 1}, 422, "bogus"),
    ],
)
def test_create_errors_are_one_line_naming_field_and_value(client, body, status, needle):
    before = client.get("/api/arenas").json()["arenas"]
    r = client.post("/api/arenas", json=body)
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and needle in detail, detail
    assert "http" not in detail  # no pydantic doc links
    assert client.get("/api/arenas").json()["arenas"] == before  # nothing was created


def test_failed_requests_change_nothing(client):
    c = _created(client)
    aid = c["arenaId"]
    owner, akey, _ = keys_of(c)
    for body in (
        {"tickMode": "auto", "tickIntervalMs": "fast"},
        {"tickMode": "turbo"},
        {"tickMode": "auto", "tickIntervalMs": float("1e308")},
        {"tickIntervalMs": -1},
    ):
        r = client.post(f"/api/arenas/{aid}/start", headers=owner, json=body)
        assert r.status_code == 422 and "tick" in r.json()["detail"], r.text
        assert client.get(f"/api/arenas/{aid}").json()["status"] == "waiting"
    bad = client.post(f"/api/arenas/{aid}/join", headers=akey, json={"agentType": "code", "strategyCode": "function ("})
    assert bad.status_code == 400 and bad.json()["detail"].startswith("strategyCode")
    assert (
        client.post(f"/api/arenas/{aid}/join", headers=akey, json={"agentType": "builtin", "nme": "x"}).status_code
        == 422
    )
    assert [p["playerId"] for p in client.get(f"/api/arenas/{aid}").json()["players"]] == ["b0", "b1"]
    assert client.post(f"/api/arenas/{aid}/start", headers=akey).status_code == 403  # arena key is not the owner's
    r = client.post(f"/api/arenas/{aid}/start", headers=owner, json={"tickMode": "manual"})
    assert r.json()["status"] == "running" and r.json()["tickMode"] == "manual"


def test_perturb_accepts_bare_spec_spec_and_spec_id(client):
    c = client.post("/api/arenas", json={**payload(), "perturbations": [DROUGHT]}).json()
    aid, (owner, _, _) = c["arenaId"], keys_of(c)
    client.post(f"/api/arenas/{aid}/start", headers=owner)
    shock = {"type": "commons_shock", "payload": {"amount": -3.0}}
    fired = [
        client.post(f"/api/arenas/{aid}/perturb", headers=owner, json=b)
        for b in (shock, {"spec": {**shock, "id": "cut", "trigger": {"kind": "manual"}}}, {"specId": "drought"})
    ]
    assert [r.status_code for r in fired] == [200, 200, 200], [r.text for r in fired]
    assert [r.json()["type"] for r in fired] == ["commons_shock", "commons_shock", "regen_shock"]
    for bad in ({}, {"specId": "nope"}, {"specId": "drought", "spec": shock}, {"type": "volcano"}):
        r = client.post(f"/api/arenas/{aid}/perturb", headers=owner, json=bad)
        assert r.status_code in (400, 422) and "\n" not in r.json()["detail"], r.text
    rec = client.post(f"/api/arenas/{aid}/tick", headers=owner).json()["tick"]
    assert [p["type"] for p in rec["ownerPerturbations"]] == ["commons_shock", "commons_shock", "regen_shock"]


def test_the_tick_answer_is_what_ticked_documents_and_only_a_running_arena_ticks(client):
    """POST /tick sends the record unvalidated (one orjson pass); M.Ticked, which the OpenAPI
    schema shows, still reads it, field for field. The arena's own status check is the only
    one: 409 before the start and after the close."""
    r = client.post("/api/arenas", json={**payload(), "perturbations": [DROUGHT]})  # the perturb test's Game
    assert r.status_code == 200, r.text
    c = r.json()
    aid, owner = c["arenaId"], keys_of(c)[0]
    refused = client.post(f"/api/arenas/{aid}/tick", headers=owner)
    assert refused.status_code == 409 and refused.json()["detail"].startswith("status:"), refused.text
    assert client.get(f"/api/arenas/{aid}").json()["status"] == "waiting"  # the tick did not start it
    assert client.post(f"/api/arenas/{aid}/start", headers=owner).status_code == 200
    r = client.post(f"/api/arenas/{aid}/tick", headers=owner)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json", r.text
    ans = r.json()
    assert M.Ticked.model_validate(ans).model_dump(mode="json") == ans and ans["tick"]["turn"] == ans["turn"] == 1
    assert client.post(f"/api/arenas/{aid}/close", headers=owner).status_code == 200
    assert client.post(f"/api/arenas/{aid}/tick", headers=owner).status_code == 409


def test_body_limit_before_parsing(client):
    big = b'{"model": {"name": "' + b"x" * 70_000 + b'"}}'
    r = client.post("/api/arenas", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "limit" in r.json()["detail"]

    def chunks():
        for _ in range(100):
            yield b" " * 1000

    r = client.post("/api/arenas", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


def test_openapi_documents_models_and_docs_work_offline(client):
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for name in (
        "CreateArena",
        "StartArena",
        "Perturb",
        "LivePlayerConfig",
        "PublicView",
        "OwnerView",
        "Summary",
        "Created",
    ):
        assert name in schemas, name
    assert {"seed", "noTalk", "pactSlots", "turns", "model", "observability"} <= set(
        schemas["CreateArena"]["properties"]
    )
    assert {"agentType", "strategyCode", "url", "baseUrl", "model"} <= set(schemas["LivePlayerConfig"]["properties"])
    body = spec["paths"]["/api/arenas/{arena_id}/start"]["post"]["requestBody"]["content"]["application/json"]
    assert "StartArena" in str(body)
    for page in ("/docs", "/", "/arenas/abc", "/static/arena.js", "/static/charts.js", "/static/example_agent.js"):
        r = client.get(page)
        assert r.status_code == 200, page
        assert not re.search(r"""(src|href)=["'](https?:)?//|import\(|https?://[^"'\s]*\.(js|css)""", r.text), page


def test_cors_configurable(client):
    r = client.options(
        "/api/arenas",
        headers={
            "Origin": "http://lab.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "x-owner-key,content-type",
        },
    )
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "http://lab.example"
    r = client.options(
        "/api/arenas", headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}
    )
    assert "access-control-allow-origin" not in r.headers


def test_auth_errors(client):
    c = _created(client)
    aid = c["arenaId"]
    assert client.get(f"/api/arenas/{aid}/owner").status_code == 403
    assert client.get(f"/api/arenas/{aid}/owner", headers={"X-Owner-Key": c["arenaKey"]}).status_code == 403
    assert client.get(f"/api/arenas/{aid}/stream").status_code == 403
    assert client.get("/api/arenas/..%2Fetc/owner").status_code == 404
    assert client.get("/api/arenas/nope").status_code == 404


def test_serve_refuses_bad_options():
    from typer.testing import CliRunner

    from bdpd_jax.cli import app

    for args, needle in (
        (["--port", "0"], "--port"),
        (["--workers", "0"], "--workers"),
        (["--switch-ms", "0"], "--switch-ms"),
    ):
        r = CliRunner().invoke(app, ["serve", *args])
        assert r.exit_code == 2 and needle in r.output, r.output
