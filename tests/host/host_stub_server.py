"""Loopback stub server for host tests: HTTP-agent responders and an OpenAI-compatible chat stub.

Routes: ``/ok`` (harvest 1.25 + actions), ``/slow?d=s`` (sleep then answer), ``/garbage``,
``/nan``, ``/negative``, ``/missing``, ``/status500``, ``/trickle`` (bytes dribbled out slowly),
``/echo`` (harvest = obs.x) and ``/v1/chat/completions`` whose answer is scripted by ``model``.
Every request body is recorded in ``STATE["requests"]`` as ``(path, raw bytes)``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

STATE: dict[str, Any] = {"requests": [], "auth": []}


async def _record(request: Request) -> bytes:
    raw = await request.body()
    STATE["requests"].append((request.url.path, raw))
    STATE["auth"].append((request.url.path, request.headers.get("authorization")))
    return raw


async def ok(request: Request) -> Response:
    await _record(request)
    return JSONResponse(
        {
            "harvest": 1.25,
            "actions": [
                {"tool": "broadcast", "text": "keep it low"},
                {"tool": "send_private", "target": "bob", "text": "psst"},
                {"tool": "teleport"},  # unknown tool -> dropped
                {"tool": "pledge", "maxHarvest": -1},  # bad value -> dropped
                "not a dict",  # not an object -> dropped
            ],
            "announced": 1.23456,
        }
    )


async def slow(request: Request) -> Response:
    await _record(request)
    await asyncio.sleep(float(request.query_params.get("d", "1")))
    return JSONResponse({"harvest": float(request.query_params.get("h", "0.5"))})


async def echo(request: Request) -> Response:
    obs = json.loads(await _record(request))
    return JSONResponse({"harvest": obs.get("x", 0)})


async def garbage(request: Request) -> Response:
    await _record(request)
    return PlainTextResponse("<html>definitely not json", media_type="application/json")


async def nan(request: Request) -> Response:
    await _record(request)
    return Response(b'{"harvest": NaN}', media_type="application/json")


async def negative(request: Request) -> Response:
    await _record(request)
    return JSONResponse({"harvest": -3})


async def missing(request: Request) -> Response:
    await _record(request)
    return JSONResponse({"take": 2})


async def status500(request: Request) -> Response:
    await _record(request)
    return JSONResponse({"harvest": 1.0}, status_code=500)


async def trickle(request: Request) -> Response:
    await _record(request)

    async def gen():  # each chunk arrives well within any per-read timeout
        for ch in b'{"harvest": 1.0,      "pad": "' + b"x" * 40 + b'"}':
            yield bytes([ch])
            await asyncio.sleep(0.05)

    return StreamingResponse(gen(), media_type="application/json")


_BOMB: list[bytes] = []


def gzip_bomb() -> bytes:
    """~1 MB of gzip that inflates to 224 MiB of zeros (built once, ~1 s at level 1)."""
    if not _BOMB:
        import zlib

        c = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        zeros = bytes(1 << 20)
        _BOMB.append(b"".join(c.compress(zeros) for _ in range(224)) + c.flush())
    return _BOMB[0]


HOSTILE_BODIES: dict[str, tuple[bytes, dict[str, str]]] = {}


def hostile(kind: str) -> tuple[bytes, dict[str, str]]:
    """A hostile answer body and its headers: gzip bomb, huge body, deep nesting, huge numbers."""
    if kind == "gzipbomb":
        return gzip_bomb(), {"content-encoding": "gzip"}
    if kind == "brotli":
        return b"\x1b\x00", {"content-encoding": "br"}
    if kind == "huge":
        return b'{"harvest": 1, "pad": "' + b"x" * (8 << 20) + b'"}', {}
    if kind == "deep":
        return b'{"harvest": 1, "x": ' + b"[" * 100000 + b"]" * 100000 + b"}", {}
    if kind == "bignum":
        return b'{"harvest": 1' + b"0" * 100000 + b"}", {}
    if kind == "overflow":
        return b'{"harvest": 1e400}', {}
    raise KeyError(kind)


async def bad(request: Request) -> Response:
    await _record(request)
    body, headers = hostile(request.query_params["kind"])
    if request.query_params.get("chunked"):  # no content-length: the cap must hold while streaming

        async def gen():
            for i in range(0, len(body), 65536):
                yield body[i : i + 65536]

        return StreamingResponse(gen(), media_type="application/json", headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def _tool_call(i: int, name: str, arguments: Any) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}


def _scripted_calls(model: str) -> tuple[list[dict[str, Any]], str | None]:
    if model == "scripted":
        return [
            _tool_call(0, "broadcast", {"text": "let's all take 1"}),
            _tool_call(1, "send_private", '{"target": "bob", "text": '),  # malformed JSON
            _tool_call(2, "launch_missiles", {"n": 3}),  # unknown tool
            _tool_call(3, "announce_intended_harvest", {"value": "lots"}),  # wrong type
            _tool_call(4, "pledge", {"maxHarvest": 1.5}),
            _tool_call(
                5, "propose_pact", {"parties": ["alice", "bob"], "terms": {"type": "harvest_cap", "maxHarvest": 2}}
            ),
            _tool_call(6, "harvest", {"amount": 0.75, "announced": 0.7}),
            _tool_call(7, "harvest", {"amount": 9}),  # extra harvest
        ], None
    if model == "talk-only":
        return [_tool_call(0, "broadcast", {"text": "hi"})], None
    if model == "plain-json":
        return [], '{"harvest": 0.9}'
    if model == "bad-harvest":
        return [_tool_call(0, "harvest", {"amount": -1})], None
    return [_tool_call(0, "harvest", {"amount": 0.5})], None


async def chat(request: Request) -> Response:
    body = json.loads(await _record(request))
    model = body.get("model", "")
    if model == "slow":
        await asyncio.sleep(2.0)
    if model == "broken":
        return PlainTextResponse("oops", status_code=200)
    if model.startswith("hostile-"):
        body, headers = hostile(model.removeprefix("hostile-"))
        return Response(body, media_type="application/json", headers=headers)
    if model == "deep-args":  # tool-call arguments nested 100 000 deep
        return JSONResponse(
            {
                "choices": [
                    {
                        "message": {
                            "tool_calls": [
                                _tool_call(0, "harvest", '{"amount": 1, "x": ' + "[" * 100000 + "]" * 100000 + "}")
                            ]
                        }
                    }
                ]
            }
        )
    calls, content = _scripted_calls(model)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return JSONResponse(
        {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {
                "prompt_tokens": 100,
                "completion_tokens": 10,
                "total_tokens": 110,
                "prompt_tokens_details": {"cached_tokens": 64},
            },
        }
    )


def build_app() -> Starlette:
    """The stub app (Starlette: FastAPI's routing is not needed here)."""
    routes = [
        Route(f"/{fn.__name__}", fn, methods=["POST"])
        for fn in (ok, slow, echo, garbage, nan, negative, missing, status500, trickle, bad)
    ]
    routes.append(Route("/v1/chat/completions", chat, methods=["POST"]))
    return Starlette(routes=routes)


def dead_port() -> int:
    """A loopback port with nothing listening (bound then closed)."""
    import socket

    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
