"""The one strict reader of request bodies: JSON and XML, for the controller's API and the
agent's RESTCONF alike (both import it from here, the layer under both).

Python's own readers are lenient where a server must not be: `json.loads` lets the last of
two equal members win silently, turns a 5000-digit number into an int only to fail later
(int's 4300-digit limit, a database's 64 bits: a 500), recurses until the interpreter's
stack gives out on a 100 000-deep body, and takes NaN and Infinity; Python's `int()` and
`float()` read Arabic-Indic and full-width digits and underscores. Here:

- a member given twice is refused, naming it;
- a number has at most MAX_DIGITS digits, read from its ASCII text, never Infinity or NaN;
- objects and arrays nest at most MAX_DEPTH deep (XML elements likewise);
- XML is read without entities, DTDs or network access, and a document type declaration
  (where billion laughs and external entities live) is refused outright.

Integers where integers are meant is the callers' part (pydantic's int refuses 1.5, the
rate parser refuses a fractional bit/s); `integer_text` reads an integer written as text
(XML, query parameters) with the same rules as a JSON number.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from lxml import etree

MAX_DEPTH = 32  # the deepest body either API takes is 6 levels (RESTCONF's routers)
MAX_DIGITS = 24  # every 64-bit integer (20 digits) and a little more, never thousands
_TOO_LARGE = Decimal(10) ** MAX_DIGITS
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")  # ASCII only: str.isdigit() also takes '١٢٣' and '１２'
_NO_DOCTYPE = "XML bodies may not carry a document type declaration (<!DOCTYPE>)"
_XML_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False, dtd_validation=False
)


class BodyError(ValueError):
    """A body that is not well formed, or not within the bounds above; `field` names the
    member where one is known."""

    def __init__(self, reason: str, field: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.field = field


# -- numbers --------------------------------------------------------------------------------
def _digits_problem(text: str) -> str | None:
    digits = sum(c.isdigit() for c in text)
    if digits > MAX_DIGITS:
        shown = text if len(text) <= 30 else f"{text[:12]}...{text[-6:]}"
        return f"the number {shown} has {digits} digits; at most {MAX_DIGITS} are accepted"
    return None


def integer_text(text: str, field: str | None = None) -> int:
    """An integer written as text (an XML element, a parameter): optional sign and ASCII
    digits, at most MAX_DIGITS of them, white space around allowed; BodyError otherwise."""
    stripped = text.strip()
    if not _INTEGER.match(stripped):
        raise BodyError(f"{stripped[:40]!r} is not an integer (ASCII digits 0-9)", field)
    if problem := _digits_problem(stripped):
        raise BodyError(problem, field)
    return int(stripped)


def _json_int(text: str) -> int:
    if problem := _digits_problem(text):
        raise BodyError(problem)
    return int(text)


def _json_float(text: str) -> int | float:
    """A JSON number with a fraction or exponent. One whose value is whole (14326.0, 1e3) is
    that integer, as JSON Schema's "integer" counts it; any other stays a float, for the
    callers to refuse where an integer is meant (1.5 bit/s)."""
    if problem := _digits_problem(text):
        raise BodyError(problem)
    exact = Decimal(text)
    if abs(exact) >= _TOO_LARGE:  # 1e999: not turned into a 1000-digit int, nor inf
        raise BodyError(f"the number {text} is too large (at most {MAX_DIGITS} digits)")
    if exact == exact.to_integral_value():
        return int(exact)
    return float(text)


def _json_constant(name: str) -> Any:
    raise BodyError(f"{name} is not a JSON number")


# -- JSON ----------------------------------------------------------------------------------
def _members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for name, value in pairs:
        if name in obj:
            raise BodyError(f"member {name[:64]!r} is given twice in one object", name[:64])
        obj[name] = value
    return obj


def parse_json(raw: bytes | str) -> Any:
    """The value of a JSON text under the rules above; BodyError says what is wrong."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as err:
        raise BodyError(f"the body is not UTF-8: {err}") from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=_members,
            parse_int=_json_int,
            parse_float=_json_float,
            parse_constant=_json_constant,
        )
    except json.JSONDecodeError as err:
        raise BodyError(f"the body is not valid JSON: {err}") from None
    except RecursionError:  # the C reader's own guard, far past MAX_DEPTH
        raise BodyError(_too_deep()) from None
    if _json_depth(value) > MAX_DEPTH:
        raise BodyError(_too_deep())
    return value


def _too_deep() -> str:
    return f"the body nests objects and arrays more than {MAX_DEPTH} deep"


def _json_depth(value: Any) -> int:
    """How deep objects and arrays nest in `value` (without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            return depth
        stack.extend((child, depth + 1) for child in children)
    return deepest


# -- XML -----------------------------------------------------------------------------------
def parse_xml(raw: bytes | str) -> Any:
    """The root element of an XML body under the rules above; BodyError otherwise."""
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    if b"<!DOCTYPE" in data:  # refused before libxml2 reads its declarations
        raise BodyError(_NO_DOCTYPE)
    try:
        root = etree.fromstring(data, _XML_PARSER)
    except (etree.XMLSyntaxError, ValueError) as err:
        raise BodyError(f"the body is not well-formed XML: {err}") from None
    if root.getroottree().docinfo.doctype:  # spelled in another encoding (UTF-16...)
        raise BodyError(_NO_DOCTYPE)
    if _xml_depth(root) > MAX_DEPTH:
        raise BodyError(f"the body nests elements more than {MAX_DEPTH} deep")
    return root


def _xml_depth(root: Any) -> int:
    deepest, stack = 0, [(root, 1)]
    while stack:
        element, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            return depth
        stack.extend((child, depth + 1) for child in element)
    return deepest
