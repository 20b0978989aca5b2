"""The API's bodies as JSON or XML, and which one a request speaks (issue 12, part 4).

Paper 001's applications send XML, so every body the API takes or gives also has an XML
form. The rule is OpenAPI's default XML mapping, so the served OpenAPI description states it
exactly: the root element is the body type's name (`<ConnectionRequest>`), each field is an
element named like its JSON field, a list is its element repeated (`<path>h1</path>
<path>h2</path>`), a list answer is wrapped (`<ConnectionViewList><ConnectionView>...`), a
null field is left out (an empty element reads as null), a map is its element repeated with
the key as attribute (`<guarantees key="l1">100</guarantees>`). Values are the JSON form's
text (`true`, ISO 8601 times), and so the text `null` is null, never the string "null".

Both forms are read by vnet.model.strict, the one strict reader RESTCONF uses too: numbers of
bounded digits, bounded nesting, no member given twice, XML without entity expansion, network
or document type declaration (billion laughs, external entities); a body is refused above
MAX_BODY bytes before it is read. An XML integer or boolean field's text becomes its JSON
value (ASCII digits only, `true`/`false`), and the dict then goes through the same strict
pydantic validation as JSON (no "5" for 5, no 1 for true), so both forms fail alike.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from lxml import etree
from pydantic import BaseModel

from vnet.controller.errors import BadRequest, ServiceError
from vnet.model import strict

JSON = "application/json"
XML = "application/xml"
_XML_TYPES = {XML, "text/xml"}
MAX_BODY = 1 << 20  # no request body of this API comes near 1 MiB


class UnsupportedMedia(ServiceError):
    status = 415
    code = "unsupported-media-type"


class NotAcceptable(ServiceError):
    status = 406
    code = "not-acceptable"


# -- which format ----------------------------------------------------------------------------
def request_format(content_type: str | None) -> str:
    """'json' or 'xml' for a body's Content-Type (none given: JSON); 415 otherwise."""
    media = (content_type or JSON).split(";")[0].strip().lower()
    if media == JSON or media.endswith("+json"):
        return "json"
    if media in _XML_TYPES or media.endswith("+xml"):
        return "xml"
    raise UnsupportedMedia(
        f"request bodies are {JSON} or {XML}, not {media!r}", field="Content-Type"
    )


def _ranges(accept: str) -> list[tuple[str, float]]:
    ranges = []
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        quality = 1.0
        for param in params:
            if param.startswith("q="):
                try:
                    quality = float(param[2:])
                except ValueError:
                    quality = 0.0
        if media:
            ranges.append((media.lower(), quality))
    return ranges


def answer_format(accept: str | None, content_type: str | None = None) -> str:
    """'xml' if the client prefers XML (Accept: application/xml), or sent XML and accepts
    anything (curl's `*/*`, no Accept); else 'json'. 406 if it accepts neither."""
    sent = "xml" if _is_xml(content_type) else "json"
    if not accept:
        return sent
    best, best_quality = None, 0.0
    for media, quality in _ranges(accept):
        if media in ("*/*", "application/*"):
            kind = sent
        elif media == JSON:
            kind = "json"
        elif media in _XML_TYPES:
            kind = "xml"
        else:
            continue
        if quality > best_quality:
            best, best_quality = kind, quality
    if best is None:
        raise NotAcceptable(f"answers are {JSON} or {XML}, not {accept!r}", field="Accept")
    return best


def _is_xml(content_type: str | None) -> bool:
    media = (content_type or "").split(";")[0].strip().lower()
    return media in _XML_TYPES or media.endswith("+xml")


# -- decoding requests -----------------------------------------------------------------------
def parse_body(raw: bytes, fmt: str, model: type[BaseModel]) -> dict[str, Any]:
    """The body as plain data for `model`'s validation; BadRequest if it is not well formed
    (the model layer's strict reader: bounded digits and depth, no member given twice)."""
    if len(raw) > MAX_BODY:
        raise BadRequest(f"the body has {len(raw)} bytes; at most {MAX_BODY} are accepted")
    try:
        if fmt == "xml":
            return _xml_body(raw, model)
        data = strict.parse_json(raw or b"null")
    except strict.BodyError as err:
        raise BadRequest(err.reason, field=err.field) from None
    if not isinstance(data, dict):
        raise BadRequest(f"the body must be a JSON object ({model.__name__})")
    return data


def _xml_body(raw: bytes, model: type[BaseModel]) -> dict[str, Any]:
    root = strict.parse_xml(raw)
    name = etree.QName(root).localname
    if name != model.__name__:
        raise BadRequest(f"the XML body's root element is <{name}>; expected <{model.__name__}>")
    return _element_fields(root, model, model.__name__)


def _element_fields(element: Any, model: type[BaseModel], where: str) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for child in element:
        if not isinstance(child.tag, str):  # comments, processing instructions
            continue
        name = etree.QName(child).localname
        info = model.model_fields.get(name)
        kind, inner = _shape(info.annotation if info else str)
        if kind == "list":
            if _is_null(child) and name not in data:  # `<path>null</path>`: no list
                data[name] = None
                continue
            items = data.setdefault(name, [])
            if items is None:
                raise BadRequest(f"<{name}> is null and has items in <{where}>", field=name)
            if not _is_empty(child):
                items.append(_value(child, inner, f"{where}/{name}"))
        elif kind == "map":
            data.setdefault(name, {})[child.get("key", "")] = child.text
        elif name in data:
            raise BadRequest(f"<{name}> appears twice in <{where}>", field=name)
        else:
            data[name] = None if _is_empty(child) else _value(child, inner, f"{where}/{name}")
    return data


def _is_null(element: Any) -> bool:
    return len(element) == 0 and (element.text or "").strip() == "null"


def _is_empty(element: Any) -> bool:
    return len(element) == 0 and not (element.text or "").strip()


def _value(element: Any, annotation: Any, where: str) -> Any:
    if _is_null(element):  # JSON's null spelled as the JSON form's text, like true and false
        return None  # an object's too: `<agent>null</agent>` is no agent, not an empty one
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _element_fields(element, annotation, where)
    if len(element):
        raise BadRequest(f"<{where}> holds elements; it takes a value", field=where)
    text = element.text.strip() if element.text else element.text
    return _typed(text, annotation) if text else text


def _typed(text: str, annotation: Any) -> Any:
    """An integer or boolean field's text as its JSON value, read as strictly as JSON reads
    it; any other text stays a string, for the (strict) validation to refuse with its field."""
    if annotation is int:
        try:
            return strict.integer_text(text)
        except strict.BodyError:
            return text
    if annotation is bool:
        return {"true": True, "false": False}.get(text, text)
    return text


def _shape(annotation: Any) -> tuple[str, Any]:
    """('list', item type), ('map', value type) or ('one', type), optional stripped."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _shape(args[0])
    if origin is list:
        return "list", args[0] if args else str
    if origin is dict:
        return "map", args[-1] if args else str
    return "one", annotation


# -- encoding answers ------------------------------------------------------------------------
def to_xml(value: BaseModel | list[BaseModel], item: type[BaseModel] | None = None) -> bytes:
    """An answer (one body, or a list of `item` bodies) in the XML form described above."""
    if isinstance(value, list):
        name = (item or (type(value[0]) if value else BaseModel)).__name__
        root = etree.Element(f"{name}List")
        for entry in value:
            _fill(etree.SubElement(root, name), entry)
    else:
        root = etree.Element(type(value).__name__)
        _fill(root, value)
    return etree.tostring(root, xml_declaration=True, encoding="utf-8")


def _fill(parent: Any, body: BaseModel) -> None:
    """The body's fields as elements; the instance tells nested bodies from maps, its
    JSON dump gives each value's text (times in ISO 8601, rates in bit/s)."""
    dumped = body.model_dump(mode="json")
    for name in type(body).model_fields:
        _add(parent, name, getattr(body, name), dumped[name])


def _add(parent: Any, name: str, value: Any, dumped: Any) -> None:
    if value is None:
        return
    if isinstance(value, BaseModel):
        _fill(etree.SubElement(parent, name), value)
    elif isinstance(value, list):
        for entry, entry_dumped in zip(value, dumped, strict=True):
            _add(parent, name, entry, entry_dumped)
    elif isinstance(value, dict):
        for key, entry in dumped.items():
            etree.SubElement(parent, name, key=str(key)).text = _text(entry)
    else:
        etree.SubElement(parent, name).text = _text(dumped)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
