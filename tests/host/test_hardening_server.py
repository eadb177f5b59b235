"""Issue 23 against the HTTP API: unbounded strings, bad plugin lists, owner perturbation
magnitudes, status codes, keys in URLs, and an arenas folder that is data, not authority.

Each case failed on the code before issue 23 (a 200 with a 900 KB id, a 500, a 400 for the
wrong state, a followed symlink, a takeover on resume); every answer here is a clean 4xx."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402
from server_helpers import keys_of, payload  # noqa: E402

from bdpd_jax.config.limits import MAX_ID_CHARS, MAX_TEXT_CHARS  # noqa: E402
from bdpd_jax.host.server import create_app  # noqa: E402


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("arenas")


@pytest.fixture(scope="module")
def client(root):
    with TestClient(create_app(root)) as c:
        yield c


def _sanction_plugin(**kw) -> dict:
    return {"type": "voluntary_sanction", "id": "vs", "cost": 1.0, "fine": 2.0, **kw}


@pytest.mark.parametrize(
    "where, body",
    [
        ("plugins.0.id", {"plugins": [_sanction_plugin(id="x" * (MAX_ID_CHARS + 1))]}),
        (
            "perturbations.0.id",
            {
                "perturbations": [
                    {
                        "id": "p" * 900_000,
                        "type": "regen_shock",
                        "trigger": {"kind": "turn", "turn": 2},
                        "payload": {"factor": 0.5},
                    }
                ]
            },
        ),
        (
            "perturbations[0].payload.reason",
            {
                "perturbations": [
                    {
                        "id": "s",
                        "type": "sanction",
                        "trigger": {"kind": "pact_violation"},
                        "payload": {"amount": 1.0, "reason": "r" * (MAX_TEXT_CHARS + 1)},
                    }
                ]
            },
        ),
        ("model.name", {"model": {"name": "n" * 10_000}}),
        ("plugins.0.type", {"plugins": [_sanction_plugin(type="t" * 900_000)]}),
    ],
)
def test_long_client_strings_are_refused_at_create(client, where, body) -> None:
    cfg = payload()
    for k, v in body.items():
        cfg[k] = {**cfg[k], **v} if k == "model" else v
    r = client.post("/api/arenas", json=cfg)
    assert r.status_code in (400, 422), r.text
    detail = r.json()["detail"]
    assert (
        detail.split(":")[0].replace("[", ".").replace("]", "") in where.replace("[", ".").replace("]", "")
        or where.split(".")[0] in detail
    ), detail
    assert len(detail) < 1000  # the refusal does not echo the string back whole


@pytest.mark.parametrize(
    "plugin, field",
    [
        (_sanction_plugin(type=["voluntary_sanction"]), "plugins[0].type"),
        (_sanction_plugin(type={"a": 1}), "plugins[0].type"),
        ({"type": "governance_agent", "id": "g", "cooldown": 2**31}, "cooldown"),
        ({"type": "governance_agent", "id": "g", "tighten": 1e15}, "tighten"),
        (_sanction_plugin(sanctioner=["always"] * 3), "plugins[0].sanctioner"),
    ],
)
def test_bad_plugin_lists_are_refused_at_create(client, plugin, field) -> None:
    """Unhashable types, int32 overflow, a runaway ladder scale, a sanctioner list no player
    count of this arena (4 players) can match: all 4xx at create, naming the field."""
    r = client.post("/api/arenas", json={**payload(players=4), "plugins": [plugin]})
    assert r.status_code in (400, 422), r.text
    assert field in r.json()["detail"], r.json()


def test_owner_perturbations_get_the_config_bounds_and_409_for_wrong_state(client) -> None:
    c = client.post("/api/arenas", json=payload()).json()
    owner, player, _ = keys_of(c)
    base = f"/api/arenas/{c['arenaId']}"
    shock = {"type": "commons_shock", "payload": {"amount": -5.0}}
    assert client.post(f"{base}/perturb", headers=owner, json=shock).status_code == 409  # waiting
    assert client.post(f"{base}/start", headers=owner).status_code == 200
    assert client.post(f"{base}/join", headers=player, json={"strategy": "adaptive"}).status_code == 409
    for bad in (
        {"type": "commons_shock", "payload": {"amount": -1e308}},
        {"type": "regen_set", "payload": {"value": 1e300}},
        {"type": "commons_shock", "id": "i" * 900_000, "payload": {"amount": -1.0}},
    ):
        r = client.post(f"{base}/perturb", headers=owner, json=bad)
        assert r.status_code in (400, 422), r.text
    assert client.post(f"{base}/perturb", headers=owner, json=shock).status_code == 200
    assert client.post(f"{base}/close", headers=owner).status_code == 200
    assert client.post(f"{base}/tick", headers=owner).status_code == 409
    r = client.post(f"{base}/start", headers={**owner, "content-type": "application/json"}, content=b"{nope")
    assert r.status_code == 422 and r.json()["detail"].startswith("body: invalid JSON"), r.json()


def test_owner_key_is_not_accepted_in_a_url(client) -> None:
    c = client.post("/api/arenas", json=payload()).json()
    base = f"/api/arenas/{c['arenaId']}"
    assert client.get(f"{base}/owner", params={"token": c["ownerKey"]}).status_code == 403
    assert client.post(f"{base}/start", params={"token": c["ownerKey"]}).status_code == 403
    from bdpd_jax.host.server.deps import access

    dep, hub = access("spectator"), client.app.state.hub
    assert dep(c["arenaId"], hub, token=c["spectatorToken"]).role == "spectator"  # the one key a URL may carry
    from fastapi import HTTPException

    with pytest.raises(HTTPException) as e:
        dep(c["arenaId"], hub, token=c["ownerKey"])
    assert e.value.status_code == 403
    long_key = {"X-Owner-Key": "k" * 100_000}
    assert client.get(f"{base}/owner", headers=long_key).status_code == 422


def _interrupted(root: Path, client) -> dict:
    """An arena that was running when its server died: started, ticked, then dropped from memory."""
    c = client.post("/api/arenas", json=payload(max_turns=6)).json()
    owner = keys_of(c)[0]
    client.post(f"/api/arenas/{c['arenaId']}/start", headers=owner)
    client.post(f"/api/arenas/{c['arenaId']}/tick", headers=owner)
    client.app.state.hub.evict(c["arenaId"])  # what a restart does: on disk, not live
    return c


def test_concurrent_resumes_one_wins(root, client) -> None:
    import concurrent.futures as cf

    c = _interrupted(root, client)
    owner = keys_of(c)[0]
    with cf.ThreadPoolExecutor(4) as ex:
        codes = sorted(
            ex.map(
                lambda _: client.post(f"/api/arenas/{c['arenaId']}/resume", headers=owner, json={}).status_code,
                range(4),
            )
        )
    assert codes == [200, 409, 409, 409]
    assert client.post(f"/api/arenas/{c['arenaId']}/tick", headers=owner).status_code == 200
    lines = [json.loads(x) for x in (root / c["arenaId"] / "turns.jsonl").read_text().splitlines()]
    assert [r["turn"] for r in lines if "event" not in r] == [1, 2]  # one writer, one line per turn


def test_a_tampered_folder_cannot_take_over_a_live_arena(root, client) -> None:
    live = client.post("/api/arenas", json=payload()).json()
    client.post(f"/api/arenas/{live['arenaId']}/start", headers=keys_of(live)[0])
    fake = _interrupted(root, client)
    meta_p = root / fake["arenaId"] / "meta.json"
    meta = json.loads(meta_p.read_text())
    meta_p.write_text(json.dumps({**meta, "arenaId": live["arenaId"]}))
    r = client.post(f"/api/arenas/{fake['arenaId']}/resume", headers=keys_of(fake)[0], json={})
    assert r.status_code in (400, 409), r.text
    assert client.get(f"/api/arenas/{live['arenaId']}/owner", headers=keys_of(live)[0]).status_code == 200
    hist = {h["arenaId"] for h in client.get("/api/arenas/history").json()["arenas"]}
    assert fake["arenaId"] in hist  # listed under its folder's name, not the id it claims


def test_a_corrupt_folder_error_names_no_server_path(root, client) -> None:
    c = _interrupted(root, client)
    p = root / c["arenaId"] / "turns.jsonl"
    p.write_text("{not json\n" + p.read_text())
    r = client.post(f"/api/arenas/{c['arenaId']}/resume", headers=keys_of(c)[0], json={})
    assert r.status_code == 400, r.text
    assert str(root) not in r.text and str(root.resolve()) not in r.text and "/tmp" not in r.text


def test_symlinks_are_never_followed(root, client, tmp_path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not serve or delete")
    c = client.post("/api/arenas", json=payload(max_turns=2)).json()
    owner = keys_of(c)[0]
    client.post(f"/api/arenas/{c['arenaId']}/start", headers=owner)
    assert client.post(f"/api/arenas/{c['arenaId']}/close", headers=owner).status_code == 200
    folder = root / c["arenaId"]
    # a summary that is a symlink to a file outside the arenas folder is not served
    (outside / "summary.json").write_text(json.dumps({"leak": True}))
    (folder / "summary.json").unlink()
    os.symlink(outside / "summary.json", folder / "summary.json")
    assert "leak" not in client.get(f"/api/arenas/history/{c['arenaId']}/summary").text
    # a whole arena folder that is a symlink is not an arena: not listed, not served, not deleted through
    moved = outside / "arena"
    shutil.move(str(folder), moved)
    os.symlink(moved, folder)
    assert client.get(f"/api/arenas/{c['arenaId']}").status_code == 404
    assert client.delete(f"/api/arenas/{c['arenaId']}", headers=owner).status_code == 404
    assert (moved / "meta.json").is_file() and (outside / "secret.txt").is_file()
    hist = client.get("/api/arenas/history")
    assert hist.status_code == 200, hist.text
    assert c["arenaId"] not in {h["arenaId"] for h in hist.json()["arenas"]}
