"""The console's forms as the API's request bodies.

The page checks each field with HTML constraints first (required, pattern, min/max), so a
person sees a mistake before sending; the server does not trust that and builds the very
pydantic body the API takes (`vnet.model.controller_api`), so a form and a JSON request fail
with the same words. Forms arrive URL-encoded; parsing them needs no multipart library.
"""

from __future__ import annotations

from typing import TypeVar
from urllib.parse import parse_qsl

from fastapi import Request
from pydantic import BaseModel, ValidationError

from vnet.controller.errors import BadRequest
from vnet.model.controller_api import ConnectionRequest, ModifyRequest

MAX_FORM = 64 * 1024  # no console form comes near this
# the request form's optional fields: an empty input means "not given", not ""
_OPTIONAL = ("protocol", "src_port", "dst_port", "path", "packet_size")
M = TypeVar("M", bound=BaseModel)


async def read_form(request: Request) -> dict[str, str]:
    """The URL-encoded body as a dict (the last value wins for a repeated field)."""
    body = await request.body()
    if len(body) > MAX_FORM:
        raise BadRequest(f"the form is larger than {MAX_FORM} bytes")
    try:
        return dict(parse_qsl(body.decode(), keep_blank_values=True, strict_parsing=False))
    except UnicodeDecodeError as exc:
        raise BadRequest("the form is not UTF-8") from exc


def path_list(text: str) -> list[str] | None:
    """'h1 h2 h3' or 'h1, h2, h3' -> ['h1', 'h2', 'h3']; empty -> None (controller chooses)."""
    hosts = text.replace(",", " ").split()
    return hosts or None


def connection_request(form: dict[str, str]) -> ConnectionRequest:
    data: dict[str, object] = {
        "name": form.get("name", "").strip(),
        "a": form.get("a", ""),
        "b": form.get("b", ""),
        "bandwidth": form.get("bandwidth", "").strip(),
        "bidirectional": form.get("bidirectional") in ("on", "true", "1"),
    }
    for field in _OPTIONAL:
        value = form.get(field, "").strip()
        if value:
            data[field] = path_list(value) if field == "path" else value
    return validated(ConnectionRequest, data)


def modify_request(form: dict[str, str]) -> ModifyRequest:
    data: dict[str, object] = {}
    if form.get("bandwidth", "").strip():
        data["bandwidth"] = form["bandwidth"].strip()
    if form.get("path", "").strip():
        data["path"] = path_list(form["path"])
    if not data:
        raise BadRequest("give a new bandwidth, a new path, or both", field="bandwidth")
    return validated(ModifyRequest, data)


def validated(model: type[M], data: dict[str, object]) -> M:
    """The API's body from a form's fields, or BadRequest naming the first bad field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        message = first["msg"].removeprefix("Value error, ")
        raise BadRequest(f"{field}: {message}", field=field) from exc
