"""A candidate tree becomes a HostConfig only if it satisfies the model's invariants (with
exact error paths) and then the YANG module (libyang)."""

from __future__ import annotations

import copy
from typing import Any

import libyang

from vnet.agent.config import AgentConfig
from vnet.model import TopologyError
from vnet.model.check import check_host
from vnet.model.host import HostConfig
from vnet.model.resolve import next_free_index
from vnet.model.yang import host as codec
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.model.yang.schema import validate


def prepare(
    config: AgentConfig, tree: dict[str, Any], running: dict[str, Any]
) -> tuple[dict[str, Any], HostConfig]:
    """A copy of `tree` with missing VR indexes assigned, and its validated HostConfig."""
    tree = copy.deepcopy(tree)
    if not config.provision_networks and codec.networks_of(tree) != codec.networks_of(running):
        raise RpcError(
            ErrorTag.ACCESS_DENIED,
            "this host's virtual networks are provisioned by its lab; "
            "change them in the lab's topology file",
            ErrorType.APPLICATION,
            "/vr:virtual-networks",
        )
    routers = codec.routers_of(tree)
    used = {int(r["index"]) for r in routers if "index" in r}
    for r in routers:
        if "index" not in r:
            r["index"] = next_free_index(used)
            used.add(r["index"])
    return tree, validated(config, tree)


def validated(config: AgentConfig, tree: dict[str, Any]) -> HostConfig:
    """The tree's HostConfig, if it satisfies the model's invariants and then YANG."""
    hc = host_config(config, tree)
    try:
        dnode = validate(tree)
    except libyang.LibyangError as err:
        raise RpcError(
            ErrorTag.INVALID_VALUE, _libyang_message(err), ErrorType.APPLICATION
        ) from None
    if dnode is not None:
        dnode.free()
    return hc


def host_config(config: AgentConfig, tree: dict[str, Any]) -> HostConfig:
    """The tree's HostConfig if the model's invariants hold; else the first problem, at its path."""
    try:
        hc = codec.host_config(tree, config.host, config.vtep)
        problems = check_host(hc)
        if problems:
            raise TopologyError(problems, "configuration")
    except TopologyError as err:
        first = err.problems[0]
        more = f" (and {len(err.problems) - 1} more)" if len(err.problems) > 1 else ""
        raise RpcError(
            ErrorTag.INVALID_VALUE,
            codec.problem_message(first) + more,
            ErrorType.APPLICATION,
            codec.error_path(first.loc, tree),
        ) from None
    return hc


def _libyang_message(err: libyang.LibyangError) -> str:
    text = str(err).removeprefix("failed to parse data tree: ")
    return f"the configuration does not satisfy the YANG model: {text}"
