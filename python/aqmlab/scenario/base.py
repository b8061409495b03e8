"""The base of every scenario model, and bounds the engines impose on integer fields."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

#: Integer fields the engines hold in 32 bits stay below this.
U32 = 2**32
#: Most bands of a classful discipline (aqmlab-core prio.rs MAX_BANDS).
MAX_BANDS = 16


class Strict(BaseModel):
    """Base model: unknown keys are rejected with the list of allowed ones."""

    # NaN and infinity are never a meaningful setting (a NaN threshold compares false with
    # everything, so range checks would let it through).
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _known_keys_only(cls, data: Any) -> Any:
        if isinstance(data, dict):
            allowed = set(cls.model_fields)
            unknown = [k for k in data if k not in allowed]
            if unknown:
                raise ValueError(
                    f"unknown key {unknown[0]!r}; allowed keys: {', '.join(sorted(allowed))}"
                )
        return data
