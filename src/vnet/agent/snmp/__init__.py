"""SNMP front-end: VNET-ROUTER-MIB (src/vnet/model/mib) served from the agent's datastore.

- `oids`: the MIB's object identifiers, in one place.
- `rowstatus`: the RFC 2579 RowStatus state machine (pure).
- `mib`: rows <-> the datastore tree, GET/GETNEXT over them, and SET
  planning with the error codes of RFC 3416 (pure).
- `engine`: pysnmp's SNMP engine (transport, communities, USM users, VACM,
  snmpEngineID and snmpEngineBoots kept in the state directory) and an
  asynchronous command responder that answers a SET only after the
  datastore commit.
- `notify`: traps and informs for datastore events.
- `frontend`: `start(datastore, config)` for the agent's registry.

Design notes: docs/snmp.md.
"""
