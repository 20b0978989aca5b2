"""What the Routers page shows of VRs the agents hold and the controller does not manage
(made on an agent directly): read from each host's agent when the page is built, for the
provider only (such a VR is no tenant's yet)."""

from __future__ import annotations

from vnet.controller.errors import ServiceError
from vnet.controller.principal import Principal
from vnet.controller.service import ControllerService
from vnet.model.controller_api import UnmanagedRouter


async def unmanaged_rows(who: Principal, service: ControllerService) -> dict[str, object]:
    """`unmanaged`: the VRs; `unread`: the hosts whose agent did not answer (and why)."""
    if not who.is_provider:
        return {"unmanaged": [], "unread": []}
    found: list[UnmanagedRouter] = []
    unread: list[str] = []
    for host in await service.hosts(who):
        try:
            found += await service.unmanaged_routers(who, host.name)
        except ServiceError as err:  # a host without an agent, or one not answering
            unread.append(f"{host.name}: {err.reason}")
    return {"unmanaged": found, "unread": unread}
