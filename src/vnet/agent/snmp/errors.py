"""SNMP error-status values (RFC 3416) and the error that carries one to the response."""

from __future__ import annotations

ERROR_STATUS = {
    "tooBig": 1,
    "noSuchName": 2,
    "badValue": 3,
    "readOnly": 4,
    "genErr": 5,
    "noAccess": 6,
    "wrongType": 7,
    "wrongLength": 8,
    "wrongEncoding": 9,
    "wrongValue": 10,
    "noCreation": 11,
    "inconsistentValue": 12,
    "resourceUnavailable": 13,
    "commitFailed": 14,
    "undoFailed": 15,
    "authorizationError": 16,
    "notWritable": 17,
    "inconsistentName": 18,
}


class SnmpError(Exception):
    """An error-status for the response, with the 1-based index of the variable binding."""

    def __init__(self, status: str, index: int, why: str = ""):
        super().__init__(f"{status} at varbind {index}: {why}")
        self.status = status
        self.index = index
        self.why = why

    @property
    def code(self) -> int:
        return ERROR_STATUS[self.status]
