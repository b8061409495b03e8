"""netem's impairments on a link's wire (aqmlab-core `link/impairments.rs`): random loss,
Gilbert-Elliott loss, duplication and delay jitter with or without reordering."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from aqmlab.scenario.base import Strict
from aqmlab.units import Duration, written


class GilbertElliott(Strict):
    """netem's `loss gemodel p r 1-h 1-k`, as fractions: per packet, the state it finds (Good or
    Bad) decides whether it is lost, and the chain moves Good -> Bad with `p`, Bad -> Good with
    `r`. Losses only in Bad (the defaults) come in bursts of mean length 1 / r, at a rate of
    p / (p + r)."""

    p: float = Field(..., ge=0, le=1, description="Good -> Bad transition probability per packet")
    r: float = Field(..., ge=0, le=1, description="Bad -> Good transition probability per packet")
    bad_loss: float = Field(1.0, ge=0, le=1, description="loss probability in Bad (netem's 1-h)")
    good_loss: float = Field(0.0, ge=0, le=1, description="loss probability in Good (netem's 1-k)")


class Impairments(Strict):
    """What the link's wire does to each packet it sends, as netem does it; every part is off
    by default. Each kind draws from its own stream (`link/<link>/loss`, `.../duplicate`,
    `.../jitter`)."""

    loss: float = Field(0.0, ge=0, le=1, description="independent (Bernoulli) loss probability (netem's loss random)")
    gemodel: GilbertElliott | None = Field(None, description="Gilbert-Elliott loss instead of `loss`")
    duplicate: float = Field(0.0, ge=0, le=1, description="probability that a packet is sent twice")
    jitter: Duration = Field(written("0s"), ge=0, description="half-width of a uniform delay variation around the "
                                                               "link's delay (netem's delay TIME JITTER)")
    reorder: bool = Field(False, description="let jitter reorder packets (netem's time-ordered queue); default "
                                             "false: a packet never leaves before the one ahead (pfifo)")

    @model_validator(mode="after")
    def _consistent(self) -> Impairments:
        """one loss model; reorder only with jitter."""
        if self.loss > 0 and self.gemodel is not None:
            raise ValueError("loss and gemodel are two loss models; give one")
        if self.reorder and self.jitter == 0:
            raise ValueError("reorder: only jitter reorders packets; set a jitter too")
        return self

    def engine_config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {"duplicate": self.duplicate, "jitter_ns": self.jitter, "reorder": self.reorder}
        if self.gemodel is not None:
            g = self.gemodel
            cfg["loss"] = {"kind": "gilbert_elliott", "p": g.p, "r": g.r, "loss_bad": g.bad_loss,
                           "loss_good": g.good_loss}
        elif self.loss > 0:
            cfg["loss"] = {"kind": "bernoulli", "p": self.loss}
        return cfg
