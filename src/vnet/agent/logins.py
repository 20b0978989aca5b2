"""Failed logins slow down password guessing: per source address and user name, after
a few free failures every further attempt must wait twice as long as the last
(1 s, 2 s, 4 s, ... up to a minute), and attempts that come early are refused
without looking at the password. Each failure is logged with its source.

Keyed by (source, user), so a user who mistypes, or an attacker guessing one
user's password, never delays another user's correct login, even from the same
address. One throttle per front-end (SSH, RESTCONF, SNMPv3)."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from vnet.agent.telemetry import LOGIN_FAILURES, LOGIN_THROTTLED

log = logging.getLogger("vnet.agent.logins")

FREE_FAILURES = 5  # typos are free
FIRST_DELAY = 1.0  # seconds, doubled with each further failure
MAX_DELAY = 60.0
MAX_TRACKED = 10_000  # (source, user) pairs remembered; the oldest are forgotten


@dataclass
class _Record:
    failures: int = 0
    not_before: float = 0.0


class LoginThrottle:
    def __init__(
        self,
        protocol: str,
        free: int = FREE_FAILURES,
        first_delay: float = FIRST_DELAY,
        max_delay: float = MAX_DELAY,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.protocol = protocol
        self.free, self.first_delay, self.max_delay = free, first_delay, max_delay
        self.clock = clock
        self._records: OrderedDict[tuple[str, str], _Record] = OrderedDict()

    def wait_left(self, source: str, user: str) -> float:
        """Seconds before `user` may try again from `source` (0: now)."""
        record = self._records.get((source, user))
        if record is None:
            return 0.0
        return max(0.0, record.not_before - self.clock())

    def failed(self, source: str, user: str) -> None:
        key = (source, user)
        record = self._records.pop(key, None) or _Record()
        self._records[key] = record  # most recent last
        while len(self._records) > MAX_TRACKED:
            self._records.popitem(last=False)
        record.failures += 1
        LOGIN_FAILURES.labels(self.protocol.lower()).inc()
        extra = record.failures - self.free
        delay = 0.0 if extra <= 0 else min(self.max_delay, self.first_delay * 2 ** (extra - 1))
        record.not_before = self.clock() + delay
        log.warning(
            "%s: failed login for user %r from %s (%d in a row%s)",
            self.protocol,
            user,
            source,
            record.failures,
            f"; next attempt refused for {delay:.0f} s" if delay else "",
        )

    def refused(self, source: str, user: str) -> None:
        """An attempt came while throttled: it is not even checked."""
        LOGIN_THROTTLED.labels(self.protocol.lower()).inc()
        log.warning(
            "%s: login for user %r from %s refused: %.1f s left after %d failures",
            self.protocol,
            user,
            source,
            self.wait_left(source, user),
            self._records[(source, user)].failures,
        )

    def succeeded(self, source: str, user: str) -> None:
        self._records.pop((source, user), None)

    def check(self, source: str, user: str, verify: Callable[[], bool]) -> bool:
        """Is the login good? `verify` runs only if the pair is not throttled."""
        if self.wait_left(source, user) > 0:
            self.refused(source, user)
            return False
        if verify():
            self.succeeded(source, user)
            return True
        self.failed(source, user)
        return False
