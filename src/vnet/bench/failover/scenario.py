"""The failover benchmark's topology: its three variants, the link that fails, the probe."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from vnet.bench.contract import OptionError
from vnet.tools import processes

SRC, DST = "pc1", "pc3"
LAB_NAMES = {"bfd": "fobfd", "ospf": "foospf", "static": "fostat"}
TTL = re.compile(r"ttl=(\d+)")


def load(file: Path) -> dict[str, Any]:
    data = YAML(typ="safe").load(file.read_text())
    if not isinstance(data, dict):
        raise OptionError("--file", f"{file}: not a topology")
    return data


def endhost(data: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((e for e in data.get("endhosts", []) if e.get("name") == name), None)


def check_shape(data: dict[str, Any]) -> None:
    src, dst = endhost(data, SRC), endhost(data, DST)
    ospf = [r for r in data.get("routers", []) if (r.get("routing") or {}).get("protocol")]
    if src is None or dst is None or not ospf or src.get("host") == dst.get("host"):
        raise OptionError(
            "--file",
            "vnet bench failover needs a topology shaped like examples/ospf-triangle.yaml "
            f"(end hosts {SRC} and {DST} on two hosts, VRs running OSPF)",
        )
    failed_link(data)  # a direct link between their hosts


def failed_link(data: dict[str, Any]) -> str:
    """The underlay link between the source's and the destination's hosts."""
    ends = {endhost(data, SRC)["host"], endhost(data, DST)["host"]}  # type: ignore[index]
    for link in data.get("links", []):
        if {link.get("a"), link.get("b")} == ends:
            return f"{link['a']}-{link['b']}"
    raise OptionError("--file", f"no underlay link between {' and '.join(sorted(ends))}")


def destination(data: dict[str, Any]) -> str:
    return str(endhost(data, DST)["ipv4"]).split("/")[0]  # type: ignore[index]


def variant(base: dict[str, Any], name: str) -> dict[str, Any]:
    """The topology of one variant, named after it."""
    data = copy.deepcopy(base)
    data["name"] = LAB_NAMES[name]
    for router in data.get("routers", []):
        for itf in router.get("interfaces", []):
            ospf = itf.get("ospf")
            if name == "static":
                itf.pop("ospf", None)
            elif name == "ospf" and isinstance(ospf, dict):
                ospf.pop("bfd", None)
        if name == "static":
            router.pop("routing", None)
    if name == "static":
        for tenant in data.get("tenants", []):
            tenant["routing"] = "auto"
    return data


def dead_interval_s(data: dict[str, Any]) -> float | None:
    """The longest dead interval on the source's and destination's routers, if set."""
    deads = [
        float(itf["ospf"]["dead"])
        for router in data.get("routers", [])
        for itf in router.get("interfaces", [])
        if isinstance(itf.get("ospf"), dict) and "dead" in itf["ospf"]
    ]
    return max(deads, default=None)


def write(data: dict[str, Any], path: Path) -> Path:
    with path.open("w") as out:
        YAML(typ="safe").dump(data, out)
    return path


def reply_ttl(lab: str, address: str, hops: int) -> int | None:
    """The TTL of pc1's echo reply from `address`, sent with a TTL that crosses at most
    `hops` VRs on the way there (None: no reply): the request's path was no longer, and
    the reply's TTL says how many VRs it crossed on the way back."""
    argv = ["ping", "-n", "-c", "1", "-W", "1", "-t", str(hops + 1), address]
    done = processes.run(f"vnet-{lab}-{SRC}", argv, timeout=5)
    found = TTL.search(done.stdout)
    return int(found.group(1)) if found else None
