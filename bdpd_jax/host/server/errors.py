"""Errors as one-line JSON and the request body size limit.

* A body that does not match its model: 422 ``{"detail": "<field>: <message> (got <value>)"}``;
  a value a validator refuses (``ValueError``, e.g. a JS syntax error, an unknown strategy):
  400 with the same shape. Only the first error is reported, on one line.
* :class:`BodyLimit` refuses a body over ``max_bytes`` with 413 before anything parses it:
  by its ``Content-Length`` when given, else by counting the chunks as they arrive.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

#: default request body limit (bytes): a creation payload or a join with its strategy code
MAX_BODY_BYTES = 1 << 20
#: the longest error detail a client gets back (a refused value is never echoed whole)
MAX_DETAIL_CHARS = 1000


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(errors: list[dict[str, Any]]) -> tuple[int, str]:
    """(status, message) of pydantic errors: the first error, naming its field and value."""
    e = errors[0]
    if e.get("type") == "json_invalid":  # its loc is a character position, not a field
        pos = e.get("loc", ("body", "?"))[-1]
        return 422, f"body: invalid JSON at character {pos} ({(e.get('ctx') or {}).get('error', 'decode error')})"
    loc = [str(p) for p in e.get("loc", ()) if p not in ("body", "query", "header", "path")]
    msg = str(e.get("msg", "invalid"))
    semantic = e.get("type") == "value_error"
    if semantic:
        msg = msg.removeprefix("Value error, ")
    field = ".".join(loc) or "body"
    if ":" in msg.split(" ")[0] and (semantic or ", got " in msg):
        text = msg  # the validator already names its field (and, with ", got", its value: once)
    else:
        text = f"{field}: {msg}"
        if "input" in e and e.get("type") != "missing":
            text += f" (got {_short(e['input'])})"
    more = f" [+{len(errors) - 1} more]" if len(errors) > 1 else ""
    return (400 if semantic else 422), " ".join((text + more).split())


def install(app: FastAPI) -> None:
    """Register the handlers that turn every error into ``{"detail": "..."}``."""

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        status, text = one_line(list(exc.errors()))
        return JSONResponse({"detail": text}, status_code=status)

    @app.exception_handler(ValueError)
    async def _value_error(request: Request, exc: ValueError):
        errs = getattr(exc, "errors", None)
        if callable(errs):  # a pydantic ValidationError raised inside a route
            return JSONResponse({"detail": _scrub(request, one_line(list(errs()))[1])}, status_code=400)
        text = _scrub(request, " ".join(str(exc).split()))
        text = text if len(text) <= MAX_DETAIL_CHARS else text[: MAX_DETAIL_CHARS - 3] + "..."
        # a lifecycle step refused for the arena's status (the Arena's own check): 409, as the routes'
        return JSONResponse({"detail": text}, status_code=409 if text.startswith("status:") else 400)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception):  # a bug: still one line of JSON
        text = _scrub(request, f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())}")
        return JSONResponse({"detail": text[:500]}, status_code=500)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)


def _scrub(request: Request, text: str) -> str:
    """``text`` without the server's own paths (its arenas folder, as given and resolved)."""
    hub = getattr(request.app.state, "hub", None)
    if hub is None:
        return text
    for root in sorted({str(hub.root.resolve()), str(hub.root.absolute()), str(hub.root)}, key=len, reverse=True):
        if root not in (".", ""):
            text = text.replace(root, "<arenas>")
    return text


class BodyLimit:
    """ASGI middleware: 413 for a request body over ``max_bytes``, checked before parsing.

    A ``Content-Length`` over the limit is refused at once; a body without one (chunked) is
    read here up to the limit, then handed on, so no route ever parses a larger one."""

    def __init__(self, app, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = int(max_bytes)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = None
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = self.max_bytes + 1
        if length is not None:
            if length > self.max_bytes:
                return await self._refuse(send)
            return await self.app(scope, receive, send)
        if scope.get("method") in ("GET", "HEAD", "OPTIONS", "DELETE"):
            return await self.app(scope, receive, send)
        chunks, seen = [], 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":
                return  # the client went away
            chunks.append(msg.get("body", b""))
            seen += len(chunks[-1])
            if seen > self.max_bytes:
                return await self._refuse(send)
            if not msg.get("more_body", False):
                break
        body = b"".join(chunks)
        given = False

        async def replay():
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send) -> None:
        body = json.dumps({"detail": f"body: larger than the limit of {self.max_bytes} bytes"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


__all__ = ["install", "one_line", "BodyLimit", "MAX_BODY_BYTES"]
