"""The dashboard and the offline API reference, served from the package (no CDN). The routes
are plain functions: FastAPI runs them in its worker threads, so no file is read on the event
loop (issue 35)."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, HTMLResponse

from bdpd_jax.host.server.deps import ArenaId

router = APIRouter(include_in_schema=False)
_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml"}


def _asset(name: str):
    path = resources.files("bdpd_jax.host.server") / "web" / name
    if "/" in name or name.startswith(".") or not path.is_file():
        raise HTTPException(404, f"asset: no {name!r}")
    return path


def _page(name: str) -> HTMLResponse:
    return HTMLResponse(_asset(name).read_text(encoding="utf-8"), headers={"cache-control": "no-cache"})


@router.get("/")
@router.get("/index.html")
def index():
    return _page("index.html")


@router.get("/arenas/{arena_id}")
def arena_page(arena_id: ArenaId):
    return _page("arena.html")


@router.get("/compare")
def compare_page():
    """Closed arenas' stock and wealth overlaid (``?ids=a,b``; read by compare.js)."""
    return _page("compare.html")


@router.get("/arena.html")
def arena_html():
    return _page("arena.html")


@router.get("/favicon.ico")
@router.get("/favicon.svg")
def favicon():
    """The tab icon (browsers ask for /favicon.ico on their own: an SVG answers both)."""
    return FileResponse(
        str(_asset("favicon.svg")), media_type="image/svg+xml", headers={"cache-control": "max-age=86400"}
    )


@router.get("/docs")
def docs():
    return _page("docs.html")


@router.get("/static/{name}")
def static(name: ArenaId):
    p = _asset(name)
    suffix = "." + name.rsplit(".", 1)[-1]
    return FileResponse(str(p), media_type=_TYPES.get(suffix, "application/octet-stream"))


__all__ = ["router"]
