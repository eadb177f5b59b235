"""Config paths of a sweep (``model.regenRate``, ``players[2].intensity``,
``perturbations[auto-sanction].payload.ladder``): parsing, resolving against a config, and
applying values to a validated copy of the config. Used by
:func:`~bdpd_jax.prepare.points.prepare_points`, the sweeps, the searches and forks."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import ValidationError

from ..config.game import ArenaConfig
from ..config.limits import check_magnitudes

# ----------------------------------------------------------------------------- paths

_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[[^\[\]]+\])*)$")
_SELECTOR = re.compile(r"\[([^\[\]]+)\]")


def parse_path(path: str) -> list[tuple[str, Any]]:
    """``a.b[2].c[id]`` -> [("key", "a"), ("key", "b"), ("index", 2), ("key", "c"), ("select", "id")].

    A bracket holding an integer is a list index; anything else selects the list element
    whose ``id`` (perturbation specs, pacts) or ``name`` (players) equals it.
    """
    if not isinstance(path, str) or not path:
        raise ValueError(f"parameter path: must be a non-empty string, got {path!r}")
    steps: list[tuple[str, Any]] = []
    for seg in path.split("."):
        m = _SEGMENT.match(seg)
        if m is None:
            raise ValueError(f"{path}: cannot parse segment {seg!r} (expected name, name[index] or name[id])")
        steps.append(("key", m.group(1)))
        for sel in _SELECTOR.findall(m.group(2)):
            sel = sel.strip().strip("'\"")
            if re.fullmatch(r"-?\d+", sel):
                steps.append(("index", int(sel)))
            else:
                steps.append(("select", sel))
    return steps


def _step_name(steps, upto: int) -> str:
    out = ""
    for kind, k in steps[:upto]:
        out += (("." if out else "") + k) if kind == "key" else f"[{k}]"
    return out


def resolve(full: dict, path: str) -> tuple[list, Any]:
    """The concrete keys (field names and list indices) a path names in the full config dict,
    and the value there; ValueError naming the path."""
    steps = parse_path(path)
    node: Any = full
    keys: list = []
    for i, (kind, k) in enumerate(steps):
        where = _step_name(steps, i + 1)
        if kind == "key":
            if not isinstance(node, dict):
                raise ValueError(f"{path}: {_step_name(steps, i) or 'config'} is not an object (got {node!r})")
            if k not in node:
                known = sorted(node)
                raise ValueError(f"{path}: unknown field {where!r}; known here: {known}")
        else:
            if not isinstance(node, list):
                raise ValueError(f"{path}: {_step_name(steps, i)} is not a list (got {node!r})")
            if kind == "index":
                if not -len(node) <= k < len(node):
                    raise ValueError(f"{path}: index {k} out of range for {_step_name(steps, i)} (length {len(node)})")
                k = k % len(node)
            else:
                hits = [j for j, e in enumerate(node) if isinstance(e, dict) and k in (e.get("id"), e.get("name"))]
                if len(hits) != 1:
                    ids = [e.get("id", e.get("name")) for e in node if isinstance(e, dict)]
                    raise ValueError(
                        f"{path}: {'no' if not hits else 'several'} element of {_step_name(steps, i)} "
                        f"with id/name {k!r}; ids/names: {ids}"
                    )
                k = hits[0]
        keys.append(k)
        node = node[k]
        if node is None and i < len(steps) - 1:
            raise ValueError(f"{path}: {where} is not set in this config (None); set it in the base config first")
    return keys, node


def plain_value(v: Any) -> Any:
    """numpy scalars/arrays -> Python values pydantic accepts."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [plain_value(x) for x in v]
    return v


def _copy(x: Any) -> Any:
    """Copy dicts and lists (the config's structure), keep other objects (e.g. Policy) as is."""
    if isinstance(x, dict):
        return {k: _copy(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_copy(v) for v in x]
    return x


@dataclass(frozen=True)
class ConfigBase:
    """A config as two dicts: ``full`` (every field, defaults filled in) is where paths are
    looked up; ``given`` (the fields the user set) is what each point's copy is built from,
    so a point's config is exactly the user's config with the swept fields set (pydantic's
    ``model_fields_set`` matters: e.g. an observation's ``noise`` is drawn only where set)."""

    full: dict
    given: dict
    resolved: dict = field(default_factory=dict, compare=False, repr=False)  # path -> (keys, value)

    def resolve(self, path: str) -> tuple[list, Any]:
        hit = self.resolved.get(path)
        if hit is None:
            hit = self.resolved[path] = resolve(self.full, path)
        return hit


def config_base(config: ArenaConfig) -> ConfigBase:
    return ConfigBase(config.model_dump(), config.model_dump(exclude_unset=True))


def check_paths(base: ConfigBase, names: Sequence[str]) -> None:
    for n in names:
        resolve(base.full, n)


def describe_point(names: Sequence[str], values: Sequence[Any]) -> str:
    return ", ".join(f"{n}={v!r}" for n, v in zip(names, values, strict=True))


def _validation_message(e: Exception) -> str:
    if isinstance(e, ValidationError):
        return "; ".join(f"{'.'.join(str(x) for x in er['loc']) or 'config'}: {er['msg']}" for er in e.errors())
    return str(e)


def apply_values(
    base: ConfigBase, names: Sequence[str], values: Sequence[Any], *, round_ints: bool = False, where: str = ""
) -> ArenaConfig:
    """A validated copy of the config with ``values`` set at the paths ``names``.

    round_ints: a float assigned where the config holds an int (e.g. ``model.maxTurns``) is
    rounded (for sampled points); otherwise pydantic rejects a non-integral one.
    """
    d = dict(base.given)  # copy on write: only the containers along the swept paths are copied
    for name, v in zip(names, values, strict=True):
        keys, old = base.resolve(name)
        v = plain_value(v)
        if round_ints and isinstance(old, int) and not isinstance(old, bool) and isinstance(v, float):
            v = int(round(v))
        node, full = d, base.full
        for k in keys[:-1]:  # create the containers the user left to their defaults
            if isinstance(node, dict) and k not in node:
                node[k] = _copy(full[k]) if isinstance(full[k], list) else {}
            else:
                child = node[k]
                node[k] = dict(child) if isinstance(child, dict) else list(child) if isinstance(child, list) else child
            node, full = node[k], full[k]
        node[keys[-1]] = v
    try:
        for name, v in zip(names, values, strict=True):  # the base was checked whole when it was validated
            check_magnitudes(plain_value(v), name)
        return ArenaConfig.model_validate(d, context={"magnitudes_checked": True})
    except (ValidationError, ValueError) as e:
        raise ValueError(
            f"sweep{where}: {describe_point(names, values)}: invalid config: {_validation_message(e)}"
        ) from None
