"""Object identifiers of VNET-ROUTER-MIB and the few standard ones the agent serves.

Keep in step with VNET-ROUTER-MIB.txt in this folder (a unit test
compares them).
"""

from __future__ import annotations

OID = tuple[int, ...]

# RFC 5612: PEN 32473 is reserved for documentation; a deployment registers its own.
ENTERPRISE: OID = (1, 3, 6, 1, 4, 1, 32473)
MIB: OID = (*ENTERPRISE, 1)  # vnetRouterMIB
NOTIFICATIONS: OID = (*MIB, 0)
OBJECTS: OID = (*MIB, 1)

HYPERVISOR: OID = (*OBJECTS, 1)
HOST_NAME: OID = (*HYPERVISOR, 1)
NEXT_INDEX: OID = (*HYPERVISOR, 2)
CONFIGURED: OID = (*HYPERVISOR, 3)
ACTIVE: OID = (*HYPERVISOR, 4)

VR_CONFIG_ENTRY: OID = (*OBJECTS, 2, 1)
IF_CONFIG_ENTRY: OID = (*OBJECTS, 3, 1)
ROUTE_ENTRY: OID = (*OBJECTS, 4, 1)
VR_ENTRY: OID = (*OBJECTS, 5, 1)
IF_STATS_ENTRY: OID = (*OBJECTS, 6, 1)
NETWORK_ENTRY: OID = (*OBJECTS, 7, 1)
NOTIFICATION_OBJECTS: OID = (*OBJECTS, 8)

# column numbers
VR_NAME, VR_ADMIN, VR_STATUS = 2, 3, 4
IF_NAME, IF_NETWORK, IF_IPV4, IF_IPV6, IF_STATUS = 2, 3, 4, 5, 6
RT_NEXT_HOP, RT_STATUS = 4, 5
VR_OPER, VR_ROUTES, VR_UPTIME, VR_IFCOUNT = 1, 2, 3, 4
IFS_OPER = 1
IFS_COUNTERS = (
    "in-octets",
    "in-packets",
    "in-errors",
    "in-discards",
    "out-octets",
    "out-packets",
    "out-errors",
    "out-discards",
)  # columns 2..9
NET_NAME, NET_TENANT, NET_IPV4, NET_IPV6, NET_MTU, NET_BANDWIDTH = 2, 3, 4, 5, 6, 7
# vnetVrResourceTable (issue 14): limits and use of a VR's cgroup, rows only for VRs with one
VR_RESOURCE_ENTRY: OID = (*OBJECTS, 9, 1)
RES_CPU_LIMIT, RES_CPUSET, RES_MEM_LIMIT, RES_CPU_TIME, RES_CUR_MEM = 1, 2, 3, 4, 5
# vnetVrRoutingTable: the routing daemons of each OSPF VR and what they learned, counted
VR_ROUTING_ENTRY: OID = (*OBJECTS, 10, 1)
RTG_DAEMONS, RTG_RESTARTS, RTG_NEIGHBORS, RTG_FULL, RTG_ROUTES, RTG_LAST_ERROR = 1, 2, 3, 4, 5, 6

EVENT_OPERATION: OID = (*NOTIFICATION_OBJECTS, 1, 0)
EVENT_MESSAGE: OID = (*NOTIFICATION_OBJECTS, 2, 0)

VR_CREATED: OID = (*NOTIFICATIONS, 1)
VR_REMOVED: OID = (*NOTIFICATIONS, 2)
VR_FAILED: OID = (*NOTIFICATIONS, 3)
VR_MODIFIED: OID = (*NOTIFICATIONS, 4)

# SNMPv2-MIB (RFC 3418): the system group, and what every notification carries
SYSTEM: OID = (1, 3, 6, 1, 2, 1, 1)
SYS_DESCR: OID = (*SYSTEM, 1, 0)
SYS_OBJECT_ID: OID = (*SYSTEM, 2, 0)
SYS_UPTIME: OID = (*SYSTEM, 3, 0)
SYS_NAME: OID = (*SYSTEM, 5, 0)
SNMP_TRAP_OID: OID = (1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0)
# IF-MIB (RFC 2863): the standard notifications of an interface's state, and their objects
LINK_DOWN: OID = (1, 3, 6, 1, 6, 3, 1, 1, 5, 3)
LINK_UP: OID = (1, 3, 6, 1, 6, 3, 1, 1, 5, 4)
IF_ENTRY: OID = (1, 3, 6, 1, 2, 1, 2, 2, 1)
IF_INDEX, IF_ADMIN_STATUS, IF_OPER_STATUS = 1, 7, 8
IF_X_NAME: OID = (1, 3, 6, 1, 2, 1, 31, 1, 1, 1, 1)  # ifXTable's ifName
# SNMP-FRAMEWORK-MIB (RFC 3411) snmpEngine group
SNMP_ENGINE: OID = (1, 3, 6, 1, 6, 3, 10, 2, 1)
ENGINE_ID: OID = (*SNMP_ENGINE, 1, 0)
ENGINE_BOOTS: OID = (*SNMP_ENGINE, 2, 0)
ENGINE_TIME: OID = (*SNMP_ENGINE, 3, 0)
ENGINE_MAX_SIZE: OID = (*SNMP_ENGINE, 4, 0)


def column(entry: OID, number: int) -> OID:
    return (*entry, number)


def dotted(oid: OID) -> str:
    return ".".join(str(x) for x in oid)
