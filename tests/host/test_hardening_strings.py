"""Issue 23, item 1: every string a client sends is bounded, in one place (config/limits.py).

A walk over every request model (the routes' bodies, queries and headers) and every config
model fails on any ``str`` field without a max_length; the docs table lists every bound."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

pytest.importorskip("fastapi")

from bdpd_jax.config import limits  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _bounded(meta: list) -> bool:
    return any(getattr(m, "max_length", None) is not None for m in meta)


def unbounded(tp, meta: list, where: str, seen: set, out: list[str]) -> None:
    """Append to ``out`` the path of every str inside annotation ``tp`` without a max_length.
    Field metadata applies through Optional/Union only (on a list it bounds the list)."""
    origin = typing.get_origin(tp)
    if tp is str:
        if not _bounded(meta):
            out.append(where)
    elif origin is typing.Annotated:
        base, *extra = typing.get_args(tp)
        unbounded(base, meta + list(extra), where, seen, out)
    elif origin in (typing.Union, types.UnionType):
        for a in typing.get_args(tp):
            unbounded(a, meta, where, seen, out)
    elif origin is typing.Literal:
        pass
    elif origin is not None:  # list[...], dict[...], tuple[...]
        for i, a in enumerate(typing.get_args(tp)):
            if a is not Ellipsis:
                unbounded(a, [], f"{where}[{'key' if origin is dict and i == 0 else 'item'}]", seen, out)
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        walk_model(tp, seen, out)


def walk_model(model: type[BaseModel], seen: set, out: list[str]) -> None:
    if model in seen:
        return
    seen.add(model)
    for name, f in model.model_fields.items():
        unbounded(f.annotation, list(f.metadata), f"{model.__name__}.{name}", seen, out)


def client_models() -> list[type[BaseModel]]:
    """Every model a client or a config file fills: config models (registries read now), the
    live side's specs, the operator's file, governance answers and the routes' bodies."""
    from bdpd_jax.config import game, governance, perturbation_types, perturbations, plugins
    from bdpd_jax.host.live import governance_agent, operator, players

    mods = (game, governance, perturbation_types, perturbations, plugins, players, operator, governance_agent)
    found = [
        v
        for m in mods
        for v in vars(m).values()
        if isinstance(v, type) and issubclass(v, BaseModel) and v.__module__ == m.__name__
    ]
    found += list(plugins.PLUGIN_SPECS.values()) + list(perturbations.SPEC_TYPES.values())
    return found


def route_params() -> list[tuple[str, typing.Any, list]]:
    """(where, annotation, metadata) of every body, query, header and path parameter of the API."""
    from fastapi.routing import APIRoute

    from bdpd_jax.host.server import routes_arenas, routes_read, web

    out = []

    def deps(d):
        yield d
        for sub in d.dependencies:
            yield from deps(sub)

    routes = [*routes_arenas.router.routes, *routes_read.router.routes, *web.router.routes]
    assert sum(isinstance(r, APIRoute) for r in routes) >= 10
    for r in routes:
        if not isinstance(r, APIRoute):
            continue
        for d in deps(r.dependant):
            for p in (*d.body_params, *d.query_params, *d.header_params, *d.path_params):
                out.append((f"{r.path} {p.name}", p.field_info.annotation, list(p.field_info.metadata)))
    return out


def test_every_client_string_is_bounded() -> None:
    out: list[str] = []
    seen: set = set()
    for m in client_models():
        walk_model(m, seen, out)
    for where, ann, meta in route_params():
        unbounded(ann, meta, where, seen, out)
    assert not out, f"str fields without a max_length (use the types of bdpd_jax/config/limits.py): {sorted(set(out))}"


def test_walker_catches_an_unbounded_field() -> None:
    """The walk is not vacuous: a bare str, a dict key and a nested model are all caught."""

    class Inner(BaseModel):
        text: str

    class Outer(BaseModel):
        ok: limits.Id
        tags: dict[str, int]
        inner: Inner | None = None

    out: list[str] = []
    walk_model(Outer, set(), out)
    assert sorted(out) == ["Inner.text", "Outer.tags[key]"]


def test_docs_list_every_string_bound() -> None:
    """docs/semantics/live/server.md's "String bounds" table has one row per bound, with its value."""
    text = (ROOT / "docs/semantics/live/server.md").read_text()
    section = text.split("### String bounds", 1)[1].split("\n### ", 1)[0]
    rows = dict(re.findall(r"^\| `(\w+)` \| ([\d ]+) \|", section, re.M))
    assert {k: int(v.replace(" ", "")) for k, v in rows.items()} == limits.STRING_BOUNDS
