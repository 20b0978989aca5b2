"""The datastore's configuration tree (RFC 7951 JSON of vnet-router) as SNMP reads it.

The one place the SNMP front-end depends on how that tree is laid out, so a
new codec replaces this module's import and nothing else.
"""

from __future__ import annotations

from vnet.model import yangdata as _layout

NETWORKS = _layout.NETWORKS
ROUTERS = _layout.ROUTERS
networks_of = _layout.networks_of
routers_of = _layout.routers_of

__all__ = ["NETWORKS", "ROUTERS", "networks_of", "routers_of"]
