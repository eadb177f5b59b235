"""Perturbation specs: the seed's JSON form ``{id, type, trigger, payload}`` (000_* 2.4).

Each perturbation ``type`` is one pydantic model registered in :data:`SPEC_TYPES`; the
config's ``perturbations`` list is parsed by :func:`parse_perturbation`, which dispatches on
``type`` and names the list index, the field and the value of any rejection. Adding a type
is one model plus one :func:`register_spec` call.

This file defines the governance types ``sanction`` and ``sanction_graduated`` and the
``pact_violation`` trigger; other perturbation types register themselves the same way.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .kernels.pacts import PACT_TERM_TYPES

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)

SPEC_TYPES: dict[str, type[BaseModel]] = {}


def register_spec(type_name: str, model: type[BaseModel]) -> type[BaseModel]:
    """Register the pydantic model of a perturbation ``type``."""
    SPEC_TYPES[type_name] = model
    return model


class PactViolationTrigger(BaseModel):
    """Fires once per pact violation (no fired-once dedup) of ``termType`` (any if omitted)."""

    model_config = _STRICT
    kind: Literal["pact_violation"]
    termType: str | None = None

    @field_validator("termType")
    @classmethod
    def _known_term(cls, v: str | None) -> str | None:
        if v is not None and v not in PACT_TERM_TYPES:
            raise ValueError(f"trigger.termType: unknown {v!r}; known: {list(PACT_TERM_TYPES)}")
        return v


class SanctionPayload(BaseModel):
    model_config = _STRICT
    amount: float = Field(ge=0)
    reason: str | None = None


class GraduatedPayload(BaseModel):
    model_config = _STRICT
    ladder: list[float] = Field(min_length=1)
    reason: str | None = None

    @field_validator("ladder")
    @classmethod
    def _amounts(cls, v: list[float]) -> list[float]:
        for i, x in enumerate(v):
            if not math.isfinite(x) or x < 0:
                raise ValueError(f"payload.ladder[{i}]: must be a finite amount >= 0, got {x!r}")
        return v


class SanctionSpec(BaseModel):
    """``sanction``: deduct ``payload.amount`` from the violator's privateResource."""

    model_config = _STRICT
    id: str
    type: Literal["sanction"]
    trigger: PactViolationTrigger
    payload: SanctionPayload

    @property
    def ladder(self) -> list[float]:
        return [self.payload.amount]


class GraduatedSanctionSpec(BaseModel):
    """``sanction_graduated``: the k-th violation costs ``ladder[min(k-1, len-1)]``."""

    model_config = _STRICT
    id: str
    type: Literal["sanction_graduated"]
    trigger: PactViolationTrigger
    payload: GraduatedPayload

    @property
    def ladder(self) -> list[float]:
        return list(self.payload.ladder)


register_spec("sanction", SanctionSpec)
register_spec("sanction_graduated", GraduatedSanctionSpec)
SANCTION_TYPES: tuple[str, ...] = ("sanction", "sanction_graduated")


def parse_perturbation(raw: Any, index: int = 0) -> BaseModel:
    """Validate one spec (a dict or an already-built model). ValueError names the field."""
    where = f"perturbations[{index}]"
    if isinstance(raw, BaseModel):
        if type(raw) not in SPEC_TYPES.values():
            raise ValueError(f"{where}: {type(raw).__name__} is not a registered perturbation spec")
        return raw
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a spec must be an object {{id, type, trigger, payload}}, got {raw!r}")
    kind = raw.get("type")
    if kind not in SPEC_TYPES:
        raise ValueError(f"{where}.type: unknown perturbation type {kind!r}; known: {sorted(SPEC_TYPES)}")
    try:
        return SPEC_TYPES[kind].model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise ValueError(f"{where}.{loc}: {first['msg']} (got {first.get('input')!r})") from None


def parse_perturbations(raw: list) -> list[BaseModel]:
    """Validate a whole list: each spec, then unique ids."""
    specs = [parse_perturbation(r, i) for i, r in enumerate(raw)]
    seen: set[str] = set()
    for i, s in enumerate(specs):
        sid = getattr(s, "id", None)
        if sid is not None:
            if sid in seen:
                raise ValueError(f"perturbations[{i}].id: duplicate id {sid!r}")
            seen.add(sid)
    return specs
