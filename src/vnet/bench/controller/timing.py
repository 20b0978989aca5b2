"""Where one request's time went: the controller's `Server-Timing` header and the client's clock.

The controller answers every request with a header such as
`Server-Timing: db;dur=1.2, path;dur=0.3, devices;dur=40.1, api;dur=0.8` (milliseconds);
vnet.client.controller.server_timing reads it. The benchmark splits the time per request
with it, without any private hook; what the client measured beyond the server's four parts
("other": HTTP, the event loop, waiting in line behind other requests) is the rest of the
end-to-end time.
"""

from __future__ import annotations

from dataclasses import dataclass

from vnet.client.controller import server_timing

PARTS = ("api", "db", "path", "devices")  # what the controller reports
SPLIT = (*PARTS, "other")  # with the rest of the client's time, adds up to end to end


class ServerTimingError(ValueError):
    """A Server-Timing header that does not carry the controller's parts."""


@dataclass(frozen=True)
class Split:
    """One request's time in milliseconds: the server's parts and the client's end to end."""

    api: float
    db: float
    path: float
    devices: float
    end_to_end: float

    @property
    def server(self) -> float:
        return self.api + self.db + self.path + self.devices

    @property
    def other(self) -> float:
        """The client's time the server did not account for (never below 0: clocks differ)."""
        return max(0.0, self.end_to_end - self.server)

    def part(self, name: str) -> float:
        return self.other if name == "other" else float(getattr(self, name))


def split(header: str | None, end_to_end_ms: float) -> Split:
    """The split of one answered request; ServerTimingError when a part is missing."""
    seconds = server_timing(header)
    missing = [p for p in PARTS if p not in seconds]
    if missing:
        raise ServerTimingError(
            f"Server-Timing {header!r} lacks {', '.join(missing)} (expected {', '.join(PARTS)})"
        )
    bad = [p for p in PARTS if not 0 <= seconds[p] < float("inf")]
    if bad:
        raise ServerTimingError(f"Server-Timing {header!r}: {', '.join(bad)} not a duration")
    return Split(*(seconds[p] * 1000 for p in PARTS), end_to_end=end_to_end_ms)
