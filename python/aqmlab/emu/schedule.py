"""Packet schedules of emulated UDP media flows (MPEG-1 and RTP video, audio, Poisson).

The schedule comes from the simulator's own frame models in Rust (`_core.udp_schedule`, same
RNG streams as the simulated flow), so an emulated flow sends what the simulated one does;
the sender process replays it against the clock. MPEG packets carry the DSCP of their frame
type's class (class 3 -> AF11, 2 -> AF12, 1 -> AF13 unless `emulation.dscp_classes` says
otherwise), which the router maps back to the class.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aqmlab import _core
from aqmlab.scenario import MEDIA, Mpeg, Scenario, _app

#: App kinds with a schedule.
KINDS: tuple[str, ...] = ("mpeg", "video", "audio", "poisson")
#: Default DSCP of each class (index = class; RFC 2597 AF1x): the router's default mapping.
DEFAULT_CLASS_DSCP = [0, 14, 12, 10]


def supports(app: Any) -> bool:
    return isinstance(app, Mpeg) and not app.responsive or isinstance(app, MEDIA)


def class_dscp(sc: Scenario) -> list[int]:
    """The DSCP that carries each class, inverting `emulation.dscp_classes` when given."""
    out = list(DEFAULT_CLASS_DSCP)
    pairs = sc.emulation.dscp_classes if sc.emulation and sc.emulation.dscp_classes else None
    if pairs:
        for dscp, cls in reversed(pairs):
            out[cls] = dscp
    return out


#: Prefix of the .npz keys holding a video flow's frames (the simulator's media_frames columns).
FRAMES = "frames_"


def write(sc: Scenario, flow: dict[str, Any], path: Path) -> Path:
    """Writes the flow's schedule as an .npz of columns (and `rtp`, and the video frames as
    `frames_<column>`), returns the path."""
    app = sc.flows[flow["group"]].app
    cols, rtp, frames = _core.udp_schedule(json.dumps(_app(app)), sc.seed, flow["flow"], flow["start_ns"],
                                           flow["stop_ns"], flow["dscp"], class_dscp(sc))
    # Any: numpy's stub for savez types **kwds such that a str -> ndarray dict clashes with allow_pickle
    arrays: dict[str, Any] = {name: _array(dt, buf) for name, dt, buf in cols}
    # The media_frames table of the flow, in its own dtypes.
    arrays |= {FRAMES + name: np.frombuffer(buf, dtype=np.dtype(f"<{dt}")) for name, dt, buf in frames}
    np.savez(path, rtp=np.array(rtp), **arrays)
    return path


def _array(dtype: str, buf: bytes) -> np.ndarray:
    return np.frombuffer(buf, dtype=np.dtype(f"<{dtype}")).astype(np.int64)


def packets(schedule: dict[str, np.ndarray]) -> pd.DataFrame:
    """The per-packet columns of a loaded schedule."""
    return pd.DataFrame({k: v for k, v in schedule.items() if k != "rtp" and not k.startswith(FRAMES)})


def media_frames(schedule: dict[str, np.ndarray]) -> pd.DataFrame:
    """The simulator's media_frames rows of a video flow, as the simulator's table code built
    them from the flow's schedule (`_core.udp_schedule`): one per frame the model generated."""
    return pd.DataFrame({k[len(FRAMES):]: v for k, v in schedule.items() if k.startswith(FRAMES)})
