"""Network configuration access control (RFC 8341, ietf-netconf-acm) for the agent.

`Nacm` answers the three questions of every front-end and the datastore: what
may this user read (`readable`), may it make this change (`check_write`), may
it run this operation (`may_exec`). The rules live in the running datastore
under `ietf-netconf-acm:nacm`; the users, their external groups and tenants,
and the recovery user in the agent's configuration.
"""

from vnet.agent.nacm.access import Access
from vnet.agent.nacm.policy import Nacm
from vnet.agent.nacm.rules import NACM

__all__ = ["NACM", "Access", "Nacm"]
