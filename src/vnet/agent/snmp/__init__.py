"""SNMP front-end: VNET-ROUTER-MIB (src/vnet/model/mib) served from the agent's datastore.

- the MIB's object identifiers are public data: vnet.model.mib.oids, next to the MIB file.
- `smi`: SNMP values as types (`Value`, `Kind`) and their pysnmp form.
- `rowstatus`: the RFC 2579 RowStatus state machine (pure).
- `rows`: the conceptual rows of the read-create tables <-> the datastore tree.
- `view`, `columns`: GET/GETNEXT over every instance served, and those instances.
- `setcheck`, `setplan`, `routers`: SET planning with the error codes of
  RFC 3416 (pure): each variable binding, the rows, the routers rebuilt.
- `errors`: SNMP error-status values and `SnmpError`.
- `engine`: pysnmp's SNMP engine (transport, communities, USM users, VACM,
  snmpEngineID and snmpEngineBoots kept in the state directory).
- `responder`: the asynchronous command responder that answers a SET only
  after the datastore commit.
- `notify`: traps and informs for datastore events.
- `frontend`: `start(datastore, config)` for the agent's registry.

Design notes: docs/snmp.md.
"""
