"""One host's configuration in memory, kept as an agent's datastore keeps it: running, a
candidate behind a lock, and at most one confirmed commit pending under a persist token,
rolled back at its timeout unless confirmed.

A candidate is checked as the agent checks it (agent/datastore/validation.py), with the
model's own checks: it must parse as a HostConfig and satisfy `check_host` (the first
problem is the refusal, at its YANG path), and, unless told otherwise, the YANG module.
Refusals carry the tags and wording of the agent's, so the controller reads them as it
reads a real agent's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import libyang
from pydantic import ValidationError

from vnet.client import ClientError
from vnet.controller.southbound import (
    AddRoutes,
    CreateNetwork,
    CreateRouter,
    DeleteNetwork,
    DeleteRouter,
    Edit,
    HostChange,
    Lease,
    RemoveRoutes,
)
from vnet.model.check import check_host
from vnet.model.host import HostConfig, NetworkOnHost
from vnet.model.host_guarantees import Srv6OnHost
from vnet.model.resolve import next_free_index
from vnet.model.yang import host as codec
from vnet.model.yang.errors import AppTag
from vnet.model.yang.schema import validate as yang_validate


@dataclass(frozen=True)
class Pending:
    """A confirmed commit waiting for its confirm."""

    token: str
    rollback: HostConfig  # running before it
    deadline: float  # the clock's time at which the agent rolls it back


def refused(
    tag: str, message: str, path: str | None = None, app_tag: str | None = None
) -> ClientError:
    return ClientError(tag, message, path, app_tag=app_tag)


def not_pending(what: str, token: str, pending: Pending | None) -> ClientError:
    """The agent's refusal of a confirm or cancel under a token nothing is pending under
    (agent/datastore/confirm.py and store.py: these tags and words, and the app-tag the
    controller matches)."""
    if pending is not None:
        return refused(
            "invalid-value",
            f"{what}: a confirmed commit with <persist> is pending; give its token as <persist-id>",
            app_tag=AppTag.NOTHING_PENDING,
        )
    if what == "cancel-commit":
        return refused(
            "operation-failed",
            "cancel-commit: no confirmed commit is pending",
            app_tag=AppTag.NOTHING_PENDING,
        )
    return refused(
        "invalid-value",
        f"{what}: no confirmed commit is pending with persist-id {token!r}",
        app_tag=AppTag.NOTHING_PENDING,
    )


class HostDatastore:
    """Running, candidate, lock and pending confirmed commit of one host."""

    def __init__(
        self,
        running: HostConfig,
        check_yang: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.running = running
        self.clock = clock  # the agent's timers run on it
        self.candidate: HostConfig | None = None  # None: the same as running
        self.locked_by: Lease | None = None
        self.pending: Pending | None = None
        self.check_yang = check_yang
        # the configuration the checks last passed: a commit of the candidate <validate>
        # just checked takes that answer, as the agent does (configurations are never
        # changed in place; every edit makes a new one)
        self._passed: HostConfig | None = None

    # -- lock and candidate ---------------------------------------------------------------
    def lock(self, lease: Lease) -> None:
        if self.locked_by is not None:
            raise refused("lock-denied", f"the candidate is locked by session {self.locked_by}")
        self.locked_by = lease

    def unlock(self, lease: Lease) -> None:
        if self.locked_by != lease:
            raise refused("operation-failed", "unlock: this session holds no lock")
        self.locked_by = None

    def require_lock(self, lease: Lease) -> None:
        if self.locked_by is not None and self.locked_by != lease:
            raise refused("in-use", f"the candidate is locked by session {self.locked_by}")

    def session_ended(self, lease: Lease) -> None:
        """Its lock goes and the candidate with it (RFC 6241 Sec. 7.5)."""
        if self.locked_by == lease:
            self.locked_by = None
            self.candidate = None

    def edit(self, edits: Sequence[Edit]) -> None:
        current = self.candidate or self.running
        for edit in edits:
            current = _edited(current, edit)
        self.candidate = current

    def discard(self) -> None:
        self.candidate = None

    def validate(self) -> None:
        self.check(self.candidate or self.running)

    # -- commits ---------------------------------------------------------------------------
    def commit(self, token: str, timeout: float) -> None:
        self.expire()
        if self.pending is not None:
            raise not_pending("commit", token, self.pending)
        wanted = self.candidate or self.running
        self.check(wanted)
        self.pending = Pending(token, self.running, self.clock() + timeout)
        self.running, self.candidate = wanted, None

    def confirm(self, token: str) -> None:
        self.expire()
        if self.pending is None or self.pending.token != token:
            raise not_pending("commit", token, self.pending)
        self.pending = None

    def cancel(self, token: str) -> None:
        self.expire()
        if self.pending is None or self.pending.token != token:
            raise not_pending("cancel-commit", token, self.pending)
        self.roll_back()

    def roll_back(self) -> None:
        """The pending commit goes back (its timeout, a cancel, a start after a crash)."""
        if self.pending is not None:
            self.running, self.pending = self.pending.rollback, None

    def expire(self) -> None:
        """What the agent's timer did by now: a pending commit past its deadline is gone."""
        if self.pending is not None and self.clock() >= self.pending.deadline:
            self.roll_back()

    # -- the agent's checks ------------------------------------------------------------------
    def check(self, hc: HostConfig) -> None:
        if hc is self._passed:
            return
        tree = codec.tree(hc)
        if problems := check_host(hc):
            first = problems[0]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise refused(
                "invalid-value",
                codec.problem_message(first) + more,
                codec.error_path(first.loc, tree),
            )
        if self.check_yang:
            _check_yang(tree)
        self._passed = hc


def _check_yang(tree: dict[str, Any]) -> None:
    try:
        dnode = yang_validate(tree)
    except libyang.LibyangError as err:
        text = str(err).removeprefix("failed to parse data tree: ")
        raise refused(
            "invalid-value", f"the configuration does not satisfy the YANG model: {text}"
        ) from None
    if dnode is not None:
        dnode.free()


def _edited(hc: HostConfig, edit: Edit) -> HostConfig:
    """`hc` with one edit made, as the agent's edit-config makes it (a new object)."""
    try:
        return _apply(hc, edit)
    except ValidationError as err:
        raise refused("invalid-value", f"the edit does not parse: {err}") from None


def _apply(hc: HostConfig, edit: Edit) -> HostConfig:
    if isinstance(edit, HostChange):
        return hc.model_copy(update={"srv6": _pieces(hc.srv6, edit)})
    if isinstance(edit, CreateRouter):
        return _with_router(hc, edit)
    if isinstance(edit, AddRoutes):
        return _with_routes(hc, edit)
    if isinstance(edit, CreateNetwork):
        return _with_network(hc, edit)
    if isinstance(edit, DeleteRouter):
        return _without_router(hc, edit.router)
    if isinstance(edit, RemoveRoutes):
        return _without_routes(hc, edit)
    if isinstance(edit, DeleteNetwork):
        kept = [n for n in hc.networks if n.network.name != edit.network]
        return hc.model_copy(update={"networks": kept})
    raise TypeError(f"not an edit: {edit!r}")


def _with_router(hc: HostConfig, edit: CreateRouter) -> HostConfig:
    if any(vr.name == edit.router.name for vr in hc.routers):
        raise refused("data-exists", f"router {edit.router.name!r} exists")
    vr = edit.router.model_copy(update={"host": hc.host})
    if vr.index is None:
        used = {r.index for r in hc.routers if r.index is not None}
        vr = vr.model_copy(update={"index": next_free_index(used)})
    return hc.model_copy(update={"routers": [*hc.routers, vr]})


def _with_network(hc: HostConfig, edit: CreateNetwork) -> HostConfig:
    if any(n.network.name == edit.network.name for n in hc.networks):
        raise refused("data-exists", f"network {edit.network.name!r} exists")
    carried = NetworkOnHost.model_validate(
        {"network": edit.network, "remote_vteps": list(edit.vteps)}
    )
    return hc.model_copy(update={"networks": [*hc.networks, carried]})


def _pieces(srv6: Srv6OnHost, change: HostChange) -> Srv6OnHost:
    """Each put replaces its connection's pieces whole, a delete removes them (none there:
    no error), locators merge by prefix."""
    gone = set(change.delete) | {p.name for p in change.put}
    connections = [c for c in srv6.connections if c.name not in gone] + list(change.put)
    locators = {x.prefix: x for x in srv6.locators} | {x.prefix: x for x in change.locators}
    return Srv6OnHost(locators=list(locators.values()), connections=connections)


def _with_routes(hc: HostConfig, edit: AddRoutes) -> HostConfig:
    """A route to the same destination is replaced; a VR that does not exist is refused."""
    routers = list(hc.routers)
    for k, vr in enumerate(routers):
        if vr.name == edit.router:
            added = {r.destination for r in edit.routes}
            kept = [r for r in vr.routes if r.destination not in added]
            routers[k] = vr.model_copy(update={"routes": [*kept, *edit.routes]})
            return hc.model_copy(update={"routers": routers})
    raise refused("data-missing", f"router {edit.router!r} does not exist")


def _without_router(hc: HostConfig, name: str) -> HostConfig:
    """The VR gone, and the locators it owned (nothing else may name them)."""
    locators = [x for x in hc.srv6.locators if x.router != name]
    srv6 = hc.srv6.model_copy(update={"locators": locators})
    routers = [vr for vr in hc.routers if vr.name != name]
    return hc.model_copy(update={"routers": routers, "srv6": srv6})


def _without_routes(hc: HostConfig, edit: RemoveRoutes) -> HostConfig:
    gone = set(edit.destinations)
    routers = [
        vr.model_copy(update={"routes": [r for r in vr.routes if str(r.destination) not in gone]})
        if vr.name == edit.router
        else vr
        for vr in hc.routers
    ]
    return hc.model_copy(update={"routers": routers})
