"""Emulation: aqmlab's disciplines in front of real kernel TCP and real UDP/RTP traffic,
between Linux network namespaces (see docs/emulation.md)."""
