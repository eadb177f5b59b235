"""An arena folder's ``meta.json`` read back: bounded and validated by a model, never trusted.

``meta.json`` is data, not authority (a folder may be damaged, foreign or hand-edited):
:func:`read_meta` reads it through ``config/files.py`` (at most ``MAX_META_BYTES``), and a
wrong field is a ValueError naming the file and the field. Its ``config`` is a JSON object,
never a path: a string there is refused, not opened (the rule of ``config/files.py``: a
loader never follows a path found inside a file). :class:`FolderMeta` is what listing and
viewing a folder read; :class:`ArenaMeta` adds what replaying it needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, StrictBool, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

from bdpd_jax.config.files import Meta, load_meta
from bdpd_jax.config.limits import MAX_NAME_CHARS

#: camelCase keys, as written; keys not declared are kept as they are (a newer writer may add some)
_WIRE = ConfigDict(extra="allow", alias_generator=to_camel, validate_by_name=True, serialize_by_alias=True)


class PlayerMeta(Meta):
    """One player as meta.json lists it (``LivePlayerConfig.public``): its name and kind; the
    rest (strategy, resource, ...) is validated by ``LivePlayerConfig`` when it joins again."""

    model_config = _WIRE
    name: StrictStr = Field(min_length=1, max_length=MAX_NAME_CHARS)
    agent_type: StrictStr = "builtin"


class FolderMeta(Meta):
    """What the server reads of a folder to list and show it: the config as a JSON object (or
    none) and the players as a list of objects."""

    model_config = _WIRE
    config: dict[str, Any] = {}  # a JSON object, never a path to follow
    players: list[PlayerMeta] = []


class ArenaMeta(FolderMeta):
    """What :func:`~bdpd_jax.host.live.replay.replay` rebuilds the arena from (``Arena.meta``)."""

    arena_id: StrictStr = Field(min_length=1)
    seed: StrictInt
    arena_index: StrictInt = Field(ge=0)
    no_talk: StrictBool
    pact_slots: StrictInt = Field(ge=1)
    generator: StrictStr
    turns: StrictInt | None
    config: dict[str, Any]  # required to replay
    players: list[PlayerMeta]


def read_meta(folder: str | Path, model: type[FolderMeta] = ArenaMeta) -> dict[str, Any]:
    """``folder``/meta.json, bounded and validated by ``model``, as the dict it holds (keys as
    written; defaults left out). ValueError naming the file and the field."""
    m = load_meta(Path(folder) / "meta.json", model)
    return m.model_dump(by_alias=True, exclude_unset=True)


__all__ = ["ArenaMeta", "FolderMeta", "PlayerMeta", "read_meta"]
