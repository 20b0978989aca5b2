"""What schemathesis is told about the controller's and RESTCONF's OpenAPI documents beyond
JSON Schema (loaded by tests/integration/test_openapi_conformance.py through
SCHEMATHESIS_HOOKS).

- The address formats pydantic names (`ipv4network`, `ipv6interface`, ...): JSON Schema has no
  such formats and no pattern can say "host bits zero", so valid values of each are generated
  here with the same meaning the controller gives them (a network is its prefix with the host
  bits zero; an interface is an address with its prefix length).
- XML carries no JSON types: `5` and `"5"` are one text, `""` and an empty element are one
  element. A negative case made by changing a value's type is then not invalid once it is
  XML, so negative cases are sent as JSON only, and a negative XML case that the coverage
  phase sends anyway does not count (the XML readers' own refusals are unit tests:
  tests/unit/test_controller_api_strict.py, test_restconf_strict.py); positive cases go in
  both forms.
"""

from __future__ import annotations

from ipaddress import ip_interface, ip_network
from typing import Any

import schemathesis
from hypothesis import strategies as st
from schemathesis.core.failures import AcceptedNegativeData

XML_TYPES = ("application/xml", "text/xml")


def _addresses(version: int) -> st.SearchStrategy[Any]:
    return st.ip_addresses(v=version)  # type: ignore[arg-type]


def _prefix_lengths(version: int) -> st.SearchStrategy[int]:
    return st.integers(0, 32 if version == 4 else 128)


def _networks(version: int) -> st.SearchStrategy[str]:
    return st.builds(
        lambda address, length: str(ip_network(f"{address}/{length}", strict=False)),
        _addresses(version),
        _prefix_lengths(version),
    )


def _interfaces(version: int) -> st.SearchStrategy[str]:
    return st.builds(
        lambda address, length: str(ip_interface(f"{address}/{length}")),
        _addresses(version),
        _prefix_lengths(version),
    )


for family in (4, 6):
    schemathesis.openapi.format(f"ipv{family}network", _networks(family))
    schemathesis.openapi.format(f"ipv{family}interface", _interfaces(family))


def _xml(case: Any) -> bool:
    media = (case.media_type or "").split(";")[0]
    return media in XML_TYPES or media.endswith("+xml")  # RESTCONF's yang-data+xml too


@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    meta = case.meta
    return not (meta is not None and meta.generation.mode.is_negative and _xml(case))


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """The same for the phases that do not ask filter_case (coverage): an accepted negative
    case is dropped only when its body was XML."""
    return not (isinstance(failure, AcceptedNegativeData) and _xml(case))
