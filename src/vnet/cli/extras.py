"""Which extra of the vnet package a command needs, when a library it imports is missing.

vnet installs by role (`vnet[agent]`, `vnet[controller]`, `vnet[bench]`, `vnet[all]`;
pyproject.toml). A command run from an install without its role's extra fails on its first
import of a library of that extra; this turns the ModuleNotFoundError into the command to
run. The extras' contents are read from the installed package's metadata, so pyproject.toml
stays their one home.
"""

from __future__ import annotations

import re
from importlib import metadata

# the role each command belongs to; the lab and the demo run agents and controllers together
ROLE_OF_COMMAND = {
    "agent": "agent",
    "controller": "controller",
    "conn": "controller",
    "tenant": "controller",
    "net": "controller",
    "vr": "controller",
    "bench": "bench",
    "lab": "all",
    "demo": "all",
}
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9._-]+)\s*(?:\[([^\]]*)\])?[^;]*(?:;\s*(.*))?$")
_EXTRA = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def extras_of_package() -> dict[str, set[str]]:
    """Extra -> the distributions it installs (other extras of vnet itself expanded)."""
    try:
        requires = metadata.requires("vnet") or []
    except metadata.PackageNotFoundError:
        return {}
    direct: dict[str, set[str]] = {}
    nested: dict[str, set[str]] = {}
    for line in requires:
        match = _REQUIREMENT.match(line)
        extra = _EXTRA.search(match.group(3) or "") if match else None
        if match is None or extra is None:
            continue
        name, wanted = normalized(match.group(1)), extra.group(1)
        if name == "vnet":
            nested.setdefault(wanted, set()).update(
                e.strip() for e in (match.group(2) or "").split(",") if e.strip()
            )
        else:
            direct.setdefault(wanted, set()).add(name)
    return {extra: _expanded(extra, direct, nested, set()) for extra in {*direct, *nested}}


def _expanded(
    extra: str, direct: dict[str, set[str]], nested: dict[str, set[str]], seen: set[str]
) -> set[str]:
    seen.add(extra)
    out = set(direct.get(extra, set()))
    for inner in nested.get(extra, set()) - seen:
        out |= _expanded(inner, direct, nested, seen)
    return out


def extra_for(module: str, command: str | None) -> str | None:
    """The extra to install for a missing `module`: the command's role when that extra holds
    it, else the smallest extra that does; None when no extra does (not a role's library)."""
    package = normalized(module.split(".")[0])
    holders = {e: names for e, names in extras_of_package().items() if package in names}
    if not holders:
        return None
    role = ROLE_OF_COMMAND.get(command or "")
    if role in holders:
        return role
    return min(holders, key=lambda e: (len(holders[e]), e == "all", e))  # a role before all


def missing_extra_message(err: ModuleNotFoundError, command: str | None) -> str | None:
    """What to tell the user, or None when the missing module is not a role's library."""
    extra = extra_for(err.name or "", command)
    if extra is None:
        return None
    what = f"vnet {command}" if command else "this command"
    return (
        f"{what} needs the {extra!r} extra (the library {err.name!r} is not installed):"
        f" pip install 'vnet[{extra}]'"
    )
