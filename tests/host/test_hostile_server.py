# ruff: noqa: E501  (the case tables keep one case a line)
"""Hostile clients against the HTTP API (formerly bench/hostile_server.py): wrong or missing
keys, other arenas' keys, odd ids, oversize bodies and fields, bad streams. Each case is one
request through the app in process (FastAPI's TestClient: no network) and must be handled
cleanly: the documented refusal (one of the expected statuses, the body a one-line JSON
error) within 10 s; never a 5xx, an exception out of the app, a hang or a 2xx. A closed
arena's stream (init, arena_closed, end) is tested in tests/host/test_server_streams.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402
from payloads import SEED_LOGISTIC  # noqa: E402

from bdpd_jax.host.server import create_app  # noqa: E402

LIMIT_S = 10.0
REFUSED = {400, 401, 403, 404, 405, 409, 413, 422}


def _payload(**extra: Any) -> dict[str, Any]:
    return {
        **json.loads(json.dumps(SEED_LOGISTIC)),
        "seed": 5,
        "players": [{"strategy": "conservative"}, {"strategy": "aggressive"}],
        **extra,
    }


class Cases:
    """Each case's verdict; the failures by class."""

    def __init__(self) -> None:
        self.bad: list[str] = []
        self.tried: dict[str, int] = {}

    def case(self, cls: str, name: str, send: Callable[[], Any], expected: set[int] = REFUSED) -> None:
        t0 = time.perf_counter()
        try:
            r = send()
            status = r.status_code
            body_ok = status < 400 or _one_line_error(r)
            verdict = (
                "hung"
                if time.perf_counter() - t0 > LIMIT_S
                else "crashed"
                if status >= 500
                else "clean"
                if status in expected and body_ok
                else "nonsense"
            )
        except Exception as exc:  # noqa: BLE001 (what escaped the app is the finding)
            status, verdict = f"{type(exc).__name__}: {exc}"[:80], "crashed"
        self.tried[cls] = self.tried.get(cls, 0) + 1
        if verdict != "clean":
            self.bad.append(f"{cls}: {verdict} {status!s} {name}")


def _one_line_error(r) -> bool:
    try:
        body = r.json()
    except ValueError:
        return False
    msg = body.get("error") or body.get("detail")
    return isinstance(msg, str) and "\n" not in msg


def _chunks(body: dict[str, Any]):
    raw = json.dumps(body).encode()
    for i in range(0, len(raw), 65536):
        yield raw[i : i + 65536]


def test_hostile_clients_are_refused_cleanly(tmp_path: Path) -> None:
    b = Cases()
    with TestClient(create_app(str(tmp_path))) as c:
        a = c.post("/api/arenas", json=_payload()).json()
        other = c.post("/api/arenas", json=_payload()).json()
        aid, own, ply, spec = a["arenaId"], a["ownerKey"], a["arenaKey"], a["spectatorToken"]
        wrong = {
            "none": {},
            "arena key as owner": {"X-Owner-Key": ply},
            "spectator as owner": {"X-Owner-Key": spec},
            "other arena's owner key": {"X-Owner-Key": other["ownerKey"]},
            "garbage": {"X-Owner-Key": "owner_" + "0" * 40},
            "64 kB key": {"X-Owner-Key": "k" * 65536},
            "owner key in the arena-key header": {"X-Arena-Key": own + "x"},
        }
        owner_routes = [
            ("post", f"/api/arenas/{aid}/start", {"tickMode": "manual"}),
            ("post", f"/api/arenas/{aid}/tick", None),
            ("post", f"/api/arenas/{aid}/close", None),
            ("post", f"/api/arenas/{aid}/perturb", {"type": "commons_shock", "payload": {"amount": -5}}),
            ("get", f"/api/arenas/{aid}/owner", None),
            ("get", f"/api/arenas/{aid}/perturbations", None),
            ("get", f"/api/arenas/{aid}/summary", None),
            ("delete", f"/api/arenas/{aid}", None),
            ("post", f"/api/arenas/{aid}/resume", {"tickMode": "manual"}),
        ]
        for method, url, body in owner_routes:
            for label, headers in wrong.items():
                b.case(
                    "server auth",
                    f"{method.upper()} {url.rsplit('/', 1)[-1]} with {label}",
                    lambda m=method, u=url, h=headers, j=body: c.request(m, u, headers=h, json=j),
                )
        for label, headers in {
            "none": {},
            "owner key of another arena": {"X-Arena-Key": other["arenaKey"]},
            "spectator token": {"X-Arena-Key": spec},
        }.items():
            b.case(
                "server auth",
                f"join with {label}",
                lambda h=headers: c.post(f"/api/arenas/{aid}/join", headers=h, json={"strategy": "random"}),
            )
        for bad_id in ["..", "..%2F..%2Fetc", "%2e%2e", "a" * 5000, "x;rm -rf", "%00", "ñ", aid.upper()]:
            b.case(
                "server auth",
                f"owner view of id {bad_id[:20]!r}",
                lambda i=bad_id: c.get(f"/api/arenas/{i}/owner", headers={"X-Owner-Key": own}),
            )
            b.case(
                "server auth",
                f"history summary of id {bad_id[:20]!r}",
                lambda i=bad_id: c.get(f"/api/arenas/history/{i}/summary"),
            )

        # streams: refused without a key; a closed arena's stream is finite and public-safe
        for label, params, headers in [
            ("no key", {}, {}),
            ("bad token", {"token": "spec_x"}, {}),
            ("other arena's token", {"token": other["spectatorToken"]}, {}),
            ("4 kB token", {"token": "t" * 4096}, {}),
        ]:
            b.case(
                "stream",
                f"subscribe with {label}",
                lambda p=params, h=headers: c.get(f"/api/arenas/{aid}/stream", params=p, headers=h),
            )
        b.case("stream", "subscribe to an unknown arena", lambda: c.get("/api/arenas/nope/stream?token=x"))
        big = "x" * (2 << 20)
        sizes = [
            ("create body of 2 MiB", lambda: c.post("/api/arenas", json=_payload(pad=big))),
            (
                "create body of 2 MiB, chunked",
                lambda: c.post(
                    "/api/arenas", content=_chunks(_payload(pad=big)), headers={"content-type": "application/json"}
                ),
            ),
            (
                "player name of 5 MB",
                lambda: c.post(
                    f"/api/arenas/{other['arenaId']}/join",
                    headers={"X-Arena-Key": other["arenaKey"]},
                    json={"strategy": "random", "name": "n" * 5_000_000},
                ),
            ),
            (
                "player name of 65 chars",
                lambda: c.post(
                    f"/api/arenas/{other['arenaId']}/join",
                    headers={"X-Arena-Key": other["arenaKey"]},
                    json={"strategy": "random", "name": "n" * 65},
                ),
            ),
            (
                "strategyCode of 200 kB",
                lambda: c.post(
                    f"/api/arenas/{other['arenaId']}/join",
                    headers={"X-Arena-Key": other["arenaKey"]},
                    json={"agentType": "code", "strategyCode": "//" + "c" * 200_000},
                ),
            ),
            ("pactSlots 192", lambda: c.post("/api/arenas", json=_payload(pactSlots=192))),
            (
                "maxPlayers 10**6",
                lambda: c.post("/api/arenas", json=_payload(model={**SEED_LOGISTIC["model"], "maxPlayers": 10**6})),
            ),
            ("turns 2**31", lambda: c.post("/api/arenas", json=_payload(turns=2**31))),
            (
                "maxTurns 1e9",
                lambda: c.post("/api/arenas", json=_payload(model={**SEED_LOGISTIC["model"], "maxTurns": 1e9})),
            ),
            (
                "tickIntervalMs 1e308",
                lambda: c.post(
                    f"/api/arenas/{other['arenaId']}/start",
                    headers={"X-Owner-Key": other["ownerKey"]},
                    json={"tickMode": "auto", "tickIntervalMs": 1e308},
                ),
            ),
            (
                "JSON nested 100 000 deep",
                lambda: c.post(
                    "/api/arenas", content="[" * 100_000 + "]" * 100_000, headers={"content-type": "application/json"}
                ),
            ),
            (
                "number with 100 000 digits",
                lambda: c.post(
                    "/api/arenas",
                    content='{"seed": ' + "9" * 100_000 + "}",
                    headers={"content-type": "application/json"},
                ),
            ),
        ]
        for name, send in sizes:
            b.case("sizes", name, send)
    assert b.tried.get("server auth", 0) > 60 and b.tried.get("stream", 0) == 5 and b.tried.get("sizes", 0) == 12
    assert not b.bad, "\n".join(b.bad)
