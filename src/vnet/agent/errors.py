"""The error every front-end raises and renders: model/yang's RpcError (RFC 6241
tags as an enumeration), re-exported for the agent's modules."""

from __future__ import annotations

from vnet.model.yang.errors import HTTP_STATUS, ErrorTag, ErrorType, RpcError, invalid

__all__ = ["HTTP_STATUS", "ErrorTag", "ErrorType", "RpcError", "invalid"]
