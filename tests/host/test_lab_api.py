"""The dashboard's lab routes (issue 41). Export: every frame as CSV and parquet with the
columns ``bdpd_jax.load`` gives, the whole arena as a zip that ``bdpd_jax.load`` reads, and the
dashboard's access rule (a spectator gets no private message's text unless allowed).
Create: every preset makes an arena; the built-in list is the registry's."""

from __future__ import annotations

import io
import zipfile

import pandas as pd
import pytest
from fastapi.testclient import TestClient
from server_helpers import keys_of, payload

import bdpd_jax
from bdpd_jax.host.server import create_app
from bdpd_jax.host.server.routes_export import FRAMES

SECRET = "SECRET-export-51ab"
SCRIPT = [{"harvest": 1.0, "actions": [{"tool": "send_private", "target": "b0", "text": SECRET}]}]


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """One arena (two built-ins and a scripted player sending a private message), 3 turns."""
    root = tmp_path_factory.mktemp("arenas")
    with TestClient(create_app(root)) as client:
        made = client.post("/api/arenas", json=payload(max_turns=8)).json()
        aid, (owner, akey, spec) = made["arenaId"], keys_of(made)
        assert client.get(f"/api/arenas/{aid}/frames/turns.csv", headers=owner).status_code == 409
        join = {"agentType": "scripted", "name": "x", "script": SCRIPT}
        assert client.post(f"/api/arenas/{aid}/join", headers=akey, json=join).status_code == 200
        client.post(f"/api/arenas/{aid}/start", headers=owner)
        for _ in range(3):
            assert client.post(f"/api/arenas/{aid}/tick", headers=owner).status_code == 200
        yield client, root, aid, owner, akey, spec


def test_every_frame_as_csv_and_parquet_matches_the_loader(played):
    client, root, aid, owner, akey, spec = played
    res = bdpd_jax.load(root / aid)
    for name in FRAMES:
        pq = client.get(f"/api/arenas/{aid}/frames/{name}.parquet", headers=spec)
        csv = client.get(f"/api/arenas/{aid}/frames/{name}.csv", headers=spec)
        assert pq.status_code == 200 and csv.status_code == 200, (name, pq.text, csv.text)
        got = pd.read_parquet(io.BytesIO(pq.content))
        assert list(pd.read_csv(io.StringIO(csv.text)).columns) == list(got.columns)
        if name == "messages":
            assert len(got) == 3 and set(got["scope"]) == {"private"}
            continue
        want = getattr(res, name) if name in ("turns", "players", "summary") else res.extra[name]
        assert list(got.columns) == list(want.columns) and len(got) == len(want), name
        assert dict(got.dtypes.astype(str)) == dict(want.dtypes.astype(str)), name
    turns = pd.read_parquet(io.BytesIO(client.get(f"/api/arenas/{aid}/frames/turns.parquet", headers=owner).content))
    pd.testing.assert_frame_equal(turns, res.turns)
    for bad, code in (("nope.csv", 404), ("turns.json", 422), ("turns.xlsx", 422)):
        assert client.get(f"/api/arenas/{aid}/frames/{bad}", headers=owner).status_code == code, bad
    for who in (akey, {}):  # a player and the public get no frame and no archive
        assert client.get(f"/api/arenas/{aid}/frames/turns.csv", headers=who).status_code == 403
        assert client.get(f"/api/arenas/{aid}/archive.zip", headers=who).status_code == 403


def test_private_text_only_to_whom_the_dashboard_shows_it(played):
    client, root, aid, owner, akey, spec = played
    own = client.get(f"/api/arenas/{aid}/frames/messages.csv", headers=owner).text
    spc = client.get(f"/api/arenas/{aid}/frames/messages.csv", headers=spec).text
    assert SECRET in own and SECRET not in spc and "True" in spc  # (text_hidden)
    for headers, shown in ((owner, True), (spec, False)):
        z = client.get(f"/api/arenas/{aid}/archive.zip", headers=headers).content
        with zipfile.ZipFile(io.BytesIO(z)) as zf:
            names = zf.namelist()
            body = b"".join(zf.read(n) for n in names)
        assert f"{aid}/turns.jsonl" in names and f"{aid}/meta.json" in names
        assert not any(n.endswith("auth.json") for n in names)
        assert (SECRET.encode() in body) is shown
        assert owner["X-Owner-Key"].encode() not in body


def test_the_archive_loads_as_its_folder(played, tmp_path):
    client, root, aid, owner, akey, spec = played
    path = tmp_path / "arena.zip"
    path.write_bytes(client.get(f"/api/arenas/{aid}/archive.zip", headers=spec).content)
    got, want = bdpd_jax.load(path), bdpd_jax.load(root / aid)
    pd.testing.assert_frame_equal(got.turns, want.turns)
    pd.testing.assert_frame_equal(got.players, want.players)
    pd.testing.assert_frame_equal(got.summary, want.summary)
    assert got.meta["live"] == str(path)
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as z:
        z.writestr("../meta.json", "{}")
        z.writestr("turns.jsonl", "")
    with pytest.raises(ValueError, match="outside"):
        bdpd_jax.load(evil)
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("a/readme.txt", "x")
    with pytest.raises(ValueError, match="no live arena"):
        bdpd_jax.load(empty)


def test_every_preset_creates_an_arena_and_builtins_are_the_registry(played):
    from bdpd_jax.kernels.policies import BUILTINS

    client = played[0]
    got = client.get("/api/presets").json()["presets"]
    cells = [p for p in got if p["id"].startswith("govsim/")]
    assert len(cells) == 12 and {"pact_ladder", "voluntary_sanctions", "governance_agent"} <= {p["id"] for p in got}
    for p in got:
        r = client.post("/api/arenas", json=p["payload"])
        assert r.status_code == 200, (p["id"], r.text)
    assert client.get("/api/builtins").json()["strategies"] == sorted(BUILTINS)
    assert {"idle", "threshold_taker"} <= set(BUILTINS)


def test_small_fixes_got_once_and_the_expected_shape(played):
    from bdpd_jax.host.agents.http import parse_response

    client = played[0]
    cfg = payload()
    cfg["model"]["regenRate"] = "x"
    detail = client.post("/api/arenas", json=cfg).json()["detail"]
    assert detail.count("got") == 1 and "regenRate" in detail and "'x'" in detail
    errors = parse_response(3)[2]
    assert len(errors) == 1 and '"harvest"' in errors[0] and "int 3" in errors[0]


def test_the_configs_pacts_are_listed_before_the_first_tick(played):
    client = played[0]
    cfg = payload(players=3)
    cfg["pacts"] = [{"parties": [0, 1], "terms": {"type": "harvest_cap", "maxHarvest": 2.0}}]
    made = client.post("/api/arenas", json=cfg).json()
    owner, spec = keys_of(made)[0], keys_of(made)[2]
    pacts = client.get(f"/api/arenas/{made['arenaId']}/dashboard", headers=spec).json()["pacts"]
    assert [(p["status"], p["parties"], p["terms"]["maxHarvest"]) for p in pacts] == [("configured", [0, 1], 2.0)]
    client.post(f"/api/arenas/{made['arenaId']}/start", headers=owner)
    pacts = client.get(f"/api/arenas/{made['arenaId']}/dashboard", headers=spec).json()["pacts"]
    assert len(pacts) == 1 and pacts[0]["status"] != "configured"


def test_perturbation_help_has_no_markup(played):
    types = played[0].get("/api/perturbation-types").json()["types"]
    assert types and not [t["type"] for t in types if "``" in t["description"]]
