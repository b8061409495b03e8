"""Closed-form models from papers, computed with numpy (no simulator involved).

* :mod:`aqmlab.models.sqf`  -- Bonald, Muscariello, Ostallo, "Self-Prioritization of Audio and
  Video Traffic" (ICC 2011), Section IV: how long shortest-queue-first (SQF) keeps a Poisson
  video prioritized against saturated TCP flows, and the fair-queueing (FQ) comparison.
* :mod:`aqmlab.models.pels` -- Kang, Zhang, Dai, Loguinov, "Multi-layer Active Queue Management
  and Congestion Control for Scalable Video Streaming" (PELS, ICDCS 2004): useful packets and
  utility of an FGS layer under Bernoulli loss, the gamma controller and MKC congestion control.

The submodules are imported explicitly (``from aqmlab.models import sqf``); importing this
package does not import matplotlib.
"""

__all__ = ["pels", "sqf"]
