"""Validation problems that name the object, the field and the reason."""

from __future__ import annotations

from dataclasses import dataclass

Loc = tuple[str | int, ...]


def format_loc(loc: Loc) -> str:
    """('routers', 2, 'interfaces', 0, 'ipv4') -> 'routers[2].interfaces[0].ipv4'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "(top level)"


SHOWN_CHARS = 40


def shown(value: str) -> str:
    """`value` quoted for an error, at most SHOWN_CHARS of it: a 20 MB name is not echoed."""
    if len(value) <= SHOWN_CHARS:
        return repr(value)
    return f"{value[:SHOWN_CHARS]!r}... ({len(value)} characters)"


@dataclass(frozen=True)
class Problem:
    loc: Loc
    message: str
    subject: str = ""  # e.g. "router 'r1'", so a person knows which object without counting

    def __str__(self) -> str:
        who = f" ({self.subject})" if self.subject else ""
        return f"{format_loc(self.loc)}{who}: {self.message}"


class TopologyError(ValueError):
    """A topology that vnet refuses to realise; carries every problem found."""

    def __init__(self, problems: list[Problem], source: str = "topology"):
        self.problems = problems
        self.source = source
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{source}: {len(problems)} problem(s):\n{lines}")
