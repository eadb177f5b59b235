"""The base of the config models: snake_case names in Python, camelCase on the wire.

Config files, HTTP bodies and ``model_dump()`` keep the seed's camelCase keys (``maxTurns``,
``privateResource``); Python code reads and writes snake_case attributes
(``cfg.model.max_turns``). Each model's one alias table, generated from its field names
(``alias_generator``), maps the two: a model validates either spelling and dumps the wire's.
A field whose wire name is not the camelCase of its Python name declares ``Field(alias=...)``.
"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

#: snake_case fields, camelCase aliases: validated by either name, dumped by alias
WIRE = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)


@cache
def alias_table(model: type[BaseModel]) -> dict[str, str]:
    """``{wire name: Python name}`` of ``model``'s fields whose two names differ."""
    return {f.alias: name for name, f in model.model_fields.items() if f.alias is not None and f.alias != name}


def wire_name(model: type[BaseModel], name: str) -> str:
    """The config-file key of field ``name`` (its alias, else the name itself)."""
    return model.model_fields[name].alias or name


def wire_names(model: type[BaseModel]) -> list[str]:
    """Every field's config-file key, in declaration order."""
    return [wire_name(model, k) for k in model.model_fields]


class ConfigModel(BaseModel):
    """A config model: fields named in snake_case, read from and written to the wire in camelCase.

    Python reads and writes the snake_case names only (``cfg.model.max_turns``); a camelCase
    attribute (``cfg.model.maxTurns``) is an AttributeError, so the type checker sees every read."""

    model_config = WIRE


__all__ = ["WIRE", "ConfigModel", "alias_table", "wire_name", "wire_names"]
