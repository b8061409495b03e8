"""The emulation testbed: three network namespaces joined by two veth pairs.

```
 <prefix>-snd            <prefix>-rtr                 <prefix>-rcv
 [<prefix>s 10.77.0.1] -- [<prefix>a | router | <prefix>b] -- [<prefix>r 10.77.0.2]
```

The router namespace has no IP addresses and no forwarding: the userspace router bridges its
two interfaces with AF_PACKET sockets. Every name starts with the run's prefix
(``aqe`` + the process id and a run number in hex), so :func:`cleanup` finds what a killed run left behind.
Segmentation and checksum offloads are turned off on every interface: with them the kernel
hands raw sockets oversized or half-checksummed frames that a real wire never carries.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

#: Every name this module creates starts with this.
PREFIX = "aqe"
NS_PATTERN = re.compile(rf"^{PREFIX}[0-9a-f]+-(snd|rtr|rcv)$")
LINK_PATTERN = re.compile(rf"^{PREFIX}[0-9a-f]+[sabr]$")

SENDER_IP = "10.77.0.1"
RECEIVER_IP = "10.77.0.2"
#: Offloads that would hand userspace frames no wire carries (RFC-less but kernel-documented:
#: Documentation/networking/segmentation-offloads.rst).
OFFLOADS = ["tso", "gso", "gro", "tx", "rx", "sg"]


class EmulationUnavailable(RuntimeError):
    """The machine cannot emulate: the message says what is missing, in one line."""


def missing_requirement() -> str | None:
    """One line naming what is missing to emulate, or None when everything is there."""
    if os.geteuid() != 0:
        return "aqmlab emulate needs root (network namespaces and raw sockets); run it with sudo"
    for tool, package in (("ip", "iproute2"), ("ethtool", "ethtool")):
        if shutil.which(tool) is None:
            return f"aqmlab emulate needs `{tool}`; install the Debian package {package}"
    probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"aqmlab emulate needs `ip netns` (network namespaces): {probe.stderr.strip() or 'not supported'}"
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise EmulationUnavailable(f"ip {' '.join(args)}: {proc.stderr.strip()}")
    return proc


def _in_ns(ns: str, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise EmulationUnavailable(f"{' '.join(cmd)} in {ns}: {proc.stderr.strip()}")
    return proc


@dataclass
class Testbed:
    prefix: str

    @property
    def sender_ns(self) -> str:
        return f"{self.prefix}-snd"

    @property
    def router_ns(self) -> str:
        return f"{self.prefix}-rtr"

    @property
    def receiver_ns(self) -> str:
        return f"{self.prefix}-rcv"

    @property
    def namespaces(self) -> list[str]:
        return [self.sender_ns, self.router_ns, self.receiver_ns]

    # interface names (at most 15 characters: "aqe" + up to 8 hex digits + 1)
    @property
    def sender_if(self) -> str:
        return f"{self.prefix}s"

    @property
    def router_sender_if(self) -> str:
        return f"{self.prefix}a"

    @property
    def router_receiver_if(self) -> str:
        return f"{self.prefix}b"

    @property
    def receiver_if(self) -> str:
        return f"{self.prefix}r"

    def exec_prefix(self, ns: str) -> list[str]:
        """The command prefix that runs a program inside namespace `ns`."""
        return ["ip", "netns", "exec", ns]

    def create(self, sysctls: dict[str, str] | None = None) -> None:
        """Builds the namespaces and links; on any failure removes what it made and raises."""
        try:
            self._create(sysctls or {})
        except BaseException:
            self.destroy()
            raise

    def _create(self, sysctls: dict[str, str]) -> None:
        for ns in self.namespaces:
            _ip("netns", "add", ns)
        _ip("link", "add", self.sender_if, "netns", self.sender_ns, "type", "veth",
            "peer", "name", self.router_sender_if, "netns", self.router_ns)
        _ip("link", "add", self.router_receiver_if, "netns", self.router_ns, "type", "veth",
            "peer", "name", self.receiver_if, "netns", self.receiver_ns)
        # No IPv6 anywhere: its autoconfiguration chatter (router and neighbour solicitations,
        # MLD) would cross the bottleneck as unexplained packets.
        for ns in self.namespaces:
            _in_ns(ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
            _ip("-n", ns, "link", "set", "lo", "up")
        _in_ns(self.router_ns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=0")
        for ns, dev in self._ends():
            _in_ns(ns, "ethtool", "-K", dev, *[x for o in OFFLOADS for x in (o, "off")], check=False)
            _ip("-n", ns, "link", "set", dev, "up")
        _ip("-n", self.sender_ns, "addr", "add", f"{SENDER_IP}/24", "dev", self.sender_if)
        _ip("-n", self.receiver_ns, "addr", "add", f"{RECEIVER_IP}/24", "dev", self.receiver_if)
        # Static neighbours: no ARP exchange at the start of the run, no ARP expiry during it.
        _ip("-n", self.sender_ns, "neigh", "replace", RECEIVER_IP, "lladdr",
            self._mac(self.receiver_ns, self.receiver_if), "dev", self.sender_if, "nud", "permanent")
        _ip("-n", self.receiver_ns, "neigh", "replace", SENDER_IP, "lladdr",
            self._mac(self.sender_ns, self.sender_if), "dev", self.receiver_if, "nud", "permanent")
        for ns in (self.sender_ns, self.receiver_ns):
            for key, value in sysctls.items():
                _in_ns(ns, "sysctl", "-q", "-w", f"{key}={value}")

    def _ends(self) -> list[tuple[str, str]]:
        return [(self.sender_ns, self.sender_if), (self.router_ns, self.router_sender_if),
                (self.router_ns, self.router_receiver_if), (self.receiver_ns, self.receiver_if)]

    @staticmethod
    def _mac(ns: str, dev: str) -> str:
        return _ip("-n", ns, "-o", "link", "show", dev).stdout.split("link/ether", 1)[1].split()[0]

    def offloads_off(self) -> bool:
        """Whether every offload that matters is off on every interface (for tests)."""
        for ns, dev in self._ends():
            text = _in_ns(ns, "ethtool", "-k", dev).stdout
            for feature in ("tcp-segmentation-offload", "generic-segmentation-offload",
                            "generic-receive-offload", "tx-checksumming"):
                if re.search(rf"^{feature}: on", text, re.M):
                    return False
        return True

    def destroy(self) -> None:
        """Kills every process left in the namespaces and deletes them (their veths go too)."""
        remove_namespaces([ns for ns in self.namespaces if ns in list_namespaces()])
        for dev in (self.sender_if, self.router_sender_if, self.router_receiver_if, self.receiver_if):
            if _ip("link", "show", dev, check=False).returncode == 0:
                _ip("link", "del", dev, check=False)


_runs = itertools.count()


def new_testbed() -> Testbed:
    """A testbed named after this process and its run number (both hex, so that names stay
    within the 15 characters of an interface name and `cleanup` recognizes them)."""
    return Testbed(prefix=f"{PREFIX}{os.getpid():x}{next(_runs) % 256:02x}")


def list_namespaces() -> list[str]:
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def remove_namespaces(names: list[str]) -> None:
    """Stops the processes inside each namespace (TERM, then KILL after 2 s) and deletes it."""
    pids = {ns: _ns_pids(ns) for ns in names}
    for ns_pids in pids.values():
        _signal_all(ns_pids, signal.SIGTERM)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and any(_alive(p) for ps in pids.values() for p in ps):
        time.sleep(0.05)
    for ns_pids in pids.values():
        _signal_all([p for p in ns_pids if _alive(p)], signal.SIGKILL)
    for ns in names:
        _ip("netns", "del", ns, check=False)


def _ns_pids(ns: str) -> list[int]:
    out = _ip("netns", "pids", ns, check=False).stdout
    return [int(p) for p in out.split() if p.isdigit() and int(p) != os.getpid()]


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def leftovers() -> tuple[list[str], list[str]]:
    """Namespaces and root-namespace links of earlier runs (by name)."""
    namespaces = [ns for ns in list_namespaces() if NS_PATTERN.match(ns)]
    links = []
    for line in _ip("-o", "link", "show", check=False).stdout.splitlines():
        name = line.split(":", 2)[1].strip().split("@", 1)[0] if line.count(":") >= 2 else ""
        if LINK_PATTERN.match(name):
            links.append(name)
    return namespaces, links


def cleanup() -> tuple[list[str], list[str]]:
    """Removes every leftover of a killed run; returns what it removed."""
    namespaces, links = leftovers()
    remove_namespaces(namespaces)
    for dev in links:
        _ip("link", "del", dev, check=False)
    return namespaces, links
