"""What one node (a VR or an end host) may use of its physical host: CPU and memory.

Written in a topology file or a NETCONF edit as
`resources: {cpu: 0.5, cpuset: "0", memory: 512MiB}`: `cpu` is a share of
one core (1.5 = one and a half cores, enforced as a CFS quota per period),
`cpuset` the cores the node's processes may run on (Linux's list syntax),
`memory` a hard limit in bytes. The substrate realises them as one cgroup per
node (substrate/cgroup.py); they govern the processes started inside the node,
not the kernel's packet forwarding (see docs/resources.md).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

# Binary units (what the kernel counts in) and decimal ones (what disks are sold in).
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kib": 1024,
    "kb": 1000,
    "m": 1024**2,
    "mib": 1024**2,
    "mb": 1000**2,
    "g": 1024**3,
    "gib": 1024**3,
    "gb": 1000**3,
    "t": 1024**4,
    "tib": 1024**4,
    "tb": 1000**4,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
# The kernel refuses to shrink a group below what its processes hold; far below
# a few MiB no routing daemon or traffic generator even starts.
MIN_MEMORY = 4 * 1024**2
MAX_CPUS = 4096  # the kernel's NR_CPUS ceiling on common builds
# the kernel's smallest CFS quota is 1 ms per period; vnet uses a 100 ms period
MIN_CPU = 0.01
_CPU_LIST_RE = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


def parse_size(value: Any) -> int:
    """Bytes from a size like "512MiB", "1G" or 536870912; ValueError with the reason."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError("a memory size must be a whole number of bytes or a string like '512MiB'")
    if isinstance(value, int):
        return value
    m = _SIZE_RE.match(value)
    if not m:
        raise ValueError(f"{value!r} is not a memory size; write e.g. '512MiB' or '2GiB'")
    unit = m.group(2).lower()
    if unit not in _SIZE_UNITS:
        raise ValueError(f"unknown size unit {m.group(2)!r} in {value!r}; use KiB, MiB, GiB")
    return int(float(m.group(1)) * _SIZE_UNITS[unit])


def format_size(size: int) -> str:
    """The shortest exact binary spelling of a size in bytes ("512MiB")."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)


def parse_cpu_list(value: Any) -> str:
    """A cpuset like "0", "0-3" or "0,2-3": ascending, no overlap, below MAX_CPUS."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not _CPU_LIST_RE.match(value.replace(" ", "")):
        raise ValueError(f"{value!r} is not a list of CPUs; write e.g. '0', '0-1' or '0,2-3'")
    text = value.replace(" ", "")
    last = -1
    for part in text.split(","):
        low, _, high = part.partition("-")
        first, end = int(low), int(high or low)
        if end < first or first <= last:
            raise ValueError(f"{value!r}: CPU ranges must ascend without overlap ({part!r})")
        if end >= MAX_CPUS:
            raise ValueError(f"{value!r}: CPU {end} is beyond the kernel's limit of {MAX_CPUS}")
        last = end
    return text


def cpu_count(cpus: str) -> int:
    """How many CPUs a (checked) cpu list names."""
    total = 0
    for part in cpus.split(","):
        low, _, high = part.partition("-")
        total += int(high or low) - int(low) + 1
    return total


Size = Annotated[int, BeforeValidator(parse_size)]
CpuList = Annotated[str, BeforeValidator(parse_cpu_list)]


class Resources(BaseModel):
    """CPU and memory limits of one node; a field left out is not limited."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # cores' worth of CPU time per period: 0.5 = half of one core
    cpu: float | None = Field(None, ge=MIN_CPU, le=MAX_CPUS)
    cpuset: CpuList | None = None
    memory: Size | None = Field(None, ge=MIN_MEMORY)

    @model_validator(mode="after")
    def _cpu_within_cpuset(self) -> Resources:
        if self.cpu is not None and abs(self.cpu * 100 - round(self.cpu * 100)) > 1e-6:
            # the YANG leaf is decimal64 with 2 digits: one spelling everywhere
            raise ValueError(f"give cpu in hundredths of a core (e.g. 0.33), not {self.cpu:g}")
        if self.cpu is not None and self.cpuset is not None and self.cpu > cpu_count(self.cpuset):
            raise ValueError(
                f"cpu {self.cpu:g} is more than the {cpu_count(self.cpuset)} CPU(s) of "
                f"cpuset {self.cpuset!r} can give"
            )
        return self

    def describe(self) -> str:
        parts = []
        if self.cpu is not None:
            parts.append(f"cpu {self.cpu:g}")
        if self.cpuset is not None:
            parts.append(f"cpuset {self.cpuset}")
        if self.memory is not None:
            parts.append(f"memory {format_size(self.memory)}")
        return ", ".join(parts) or "no limits"
