"""The names of vnet's YANG module (vnet-router@REVISION.yang, in this folder)."""

from __future__ import annotations

from pathlib import Path

MODULE = "vnet-router"
PREFIX = "vr"
NAMESPACE = "urn:vnet:yang:vnet-router"
REVISION = "2026-11-22"
YANG_DIR = Path(__file__).resolve().parent
# RFC 6022: the schemas, sessions and statistics of the NETCONF server
MONITORING_MODULE = "ietf-netconf-monitoring"
MONITORING_REVISION = "2010-10-04"
# RFC 8341: the access-control rules, kept in the datastore like any configuration
NACM_MODULE = "ietf-netconf-acm"
NACM_DEVIATIONS = "vnet-nacm-deviations"  # rule paths: checked by the agent, not libyang

# The XML namespaces of the protocols and IETF modules vnet speaks, named once
NETCONF_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"  # RFC 6241: <rpc>, <config>, ...
NOTIFICATION_NS = "urn:ietf:params:xml:ns:netconf:notification:1.0"  # RFC 5277
MONITORING_NS = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"  # RFC 6022
NACM_NS = "urn:ietf:params:xml:ns:yang:ietf-netconf-acm"  # RFC 8341
RESTCONF_NS = "urn:ietf:params:xml:ns:yang:ietf-restconf"  # RFC 8040: errors


def qualified(name: str) -> str:
    """A top-level member name as RFC 7951 writes it: 'vnet-router:routers'."""
    return f"{MODULE}:{name}"


NETWORKS = qualified("virtual-networks")
ROUTERS = qualified("routers")
