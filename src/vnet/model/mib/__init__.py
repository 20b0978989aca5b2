"""VNET-ROUTER-MIB: the MIB module (VNET-ROUTER-MIB.txt, SMIv2, in this folder) and its
object identifiers (`oids`), public data that the agent serves and any manager reads."""
