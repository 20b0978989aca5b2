"""The one codec between the wire (XML, JSON), the RFC 7951 tree and model objects,
next to the YANG module it speaks (vnet-router@*.yang)."""
