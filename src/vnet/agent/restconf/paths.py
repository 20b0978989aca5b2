"""RESTCONF data resource identifiers (RFC 8040 section 3.5.3) <-> schema steps.

"vnet-router:routers/router=r1/interface=eth0" becomes three steps: the
container `routers`, the `router` entry whose key `name` is "r1", and its
`interface` entry "eth0". Key values are percent-decoded after splitting,
so a route's destination is written `route=10.0.0.0%2F8`. Errors name the
exact segment that is wrong, with the XPath of what was understood so far.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.model.yang.paths import key_predicate, leaf_text
from vnet.model.yang.schema import DATA_KINDS, MODULE, PREFIX, SchemaNode, root


@dataclass
class StatusError(RpcError):
    """An RpcError whose HTTP status is not the one RFC 8040 maps its tag to by default
    (e.g. invalid-value for a resource that does not exist is 404, not 400)."""

    status: int = 400

    @property
    def http_status(self) -> int:
        return self.status


def not_found(what: str, path: str) -> StatusError:
    return StatusError(
        ErrorTag.INVALID_VALUE, f"{what} does not exist", ErrorType.APPLICATION, path, status=404
    )


@dataclass(frozen=True)
class Step:
    name: str
    node: SchemaNode
    keys: dict[str, Any] | None = None  # list entries: key leaf -> RFC 7951 value

    @property
    def is_entry(self) -> bool:
        return self.keys is not None


@dataclass(frozen=True)
class DataPath:
    steps: tuple[Step, ...] = field(default_factory=tuple)

    @property
    def is_datastore(self) -> bool:
        return not self.steps

    @property
    def target(self) -> Step | None:
        return self.steps[-1] if self.steps else None

    @property
    def node(self) -> SchemaNode:
        return self.steps[-1].node if self.steps else root()

    def parent(self) -> DataPath:
        return DataPath(self.steps[:-1])

    def child(self, step: Step) -> DataPath:
        return DataPath((*self.steps, step))

    def xpath(self) -> str:
        """The XPath the datastore's error paths use: /vr:routers/vr:router[vr:name='r1']."""
        return xpath(self.steps)

    def uri(self) -> str:
        """The resource identifier, percent-encoded, as it follows /restconf/data/."""
        parts = []
        for i, s in enumerate(self.steps):
            name = f"{MODULE}:{s.name}" if i == 0 else s.name
            if s.keys is not None:
                name += "=" + ",".join(quote(leaf_text(v), safe="") for v in s.keys.values())
            parts.append(name)
        return "/".join(parts)


def xpath(steps: tuple[Step, ...] | list[Step]) -> str:
    out = ""
    for s in steps:
        out += f"/{PREFIX}:{s.name}" + key_predicate((s.keys or {}).items())
    return out or "/"


def bad_path(message: str, path: str, tag: ErrorTag = ErrorTag.INVALID_VALUE) -> RpcError:
    return RpcError(tag, message, ErrorType.PROTOCOL, path)


def _identifier(segment: str, first: bool, so_far: str) -> str:
    module, sep, name = segment.rpartition(":")
    if not sep:
        if first:
            raise bad_path(
                f"{segment!r}: the first node of a data resource must be module-qualified; "
                f"write '{MODULE}:{segment}'",
                so_far,
            )
        return name
    if module != MODULE:
        raise bad_path(
            f"{module!r} is not a module of this server (its data model is {MODULE!r}); "
            f"write '{MODULE}:{name}'",
            so_far,
            ErrorTag.UNKNOWN_NAMESPACE,
        )
    return name


def parse(raw: str) -> DataPath:
    """A percent-encoded resource identifier (what follows /restconf/data/) -> steps.

    Raises RpcError (400) naming the segment that does not match the schema.
    """
    raw = raw.strip("/")
    if not raw:
        return DataPath()
    node = root()
    steps: list[Step] = []
    for i, segment in enumerate(raw.split("/")):
        so_far = xpath(steps)
        if not segment:
            raise bad_path("empty path segment ('//') in the resource identifier", so_far)
        ident, eq, key_text = segment.partition("=")
        name = _identifier(unquote(ident), i == 0, so_far)
        child = _data_child(node, name, steps, so_far)
        here = so_far + f"/{PREFIX}:{name}"
        if child.kind == "list":
            if not eq:
                key_names = ",".join(child.keys)
                raise bad_path(f"{name!r} is a list: name one entry, as {name}=<{key_names}>", here)
            steps.append(Step(name, child, _list_keys(child, name, key_text, here)))
        else:
            if eq:
                what = (
                    "addressing single leaf-list entries is not supported; address its parent"
                    if child.kind == "leaf-list"
                    else f"{name!r} is a {child.kind}, not a list: it takes no key ('=')"
                )
                raise bad_path(what, here)
            steps.append(Step(name, child))
        node = child
    return DataPath(tuple(steps))


def _data_child(node: SchemaNode, name: str, steps: list[Step], so_far: str) -> SchemaNode:
    """The data node `name` under `node`, or a 400 that lists what there is."""
    if node.kind in ("leaf", "leaf-list"):
        raise bad_path(
            f"{steps[-1].name!r} is a {node.kind} and has no child {name!r}",
            so_far,
            ErrorTag.UNKNOWN_ELEMENT,
        )
    child = node.child(name)
    if child is None or child.kind not in DATA_KINDS:
        known = ", ".join(n for n, c in node.children.items() if c.kind in DATA_KINDS)
        where = f"{steps[-1].name!r}" if steps else f"module {MODULE!r}"
        raise bad_path(
            f"{name!r} is not a data node of {where} (it has: {known})",
            so_far,
            ErrorTag.UNKNOWN_ELEMENT,
        )
    return child


def _list_keys(child: SchemaNode, name: str, key_text: str, here: str) -> dict[str, Any]:
    """The key values of one list entry ('a,b' after '='), typed as the schema says."""
    values = key_text.split(",")
    if len(values) != len(child.keys):
        raise bad_path(
            f"{name!r} has {len(child.keys)} key(s) ({', '.join(child.keys)}), "
            f"but {len(values)} value(s) were given",
            here,
        )
    keys: dict[str, Any] = {}
    for key, text in zip(child.keys, values, strict=True):
        value = unquote(text)
        try:
            keys[key] = child.children[key].to_json_value(value)
        except ValueError:
            raise bad_path(
                f"key {key!r} of {name!r}: {value!r} is not a valid "
                f"{child.children[key].base_type}",
                here,
            ) from None
    return keys


def json_path(path: str | None) -> str | None:
    """An XPath with the module prefix (/vr:routers/vr:router[vr:name='r1']) -> the
    RFC 7951 instance-identifier form (/vnet-router:routers/router[name='r1'])."""
    if not path:
        return path
    out: list[str] = []
    quote_char: str | None = None
    first = True
    i = 0
    tag = f"{PREFIX}:"
    while i < len(path):
        c = path[i]
        if quote_char:
            out.append(c)
            if c == quote_char:
                quote_char = None
            i += 1
            continue
        if c in "'\"":
            quote_char = c
        elif path.startswith(tag, i) and (path[i - 1] if i else "/") in "/[":
            if (path[i - 1] if i else "/") == "/" and first:
                out.append(f"{MODULE}:")
                first = False
            i += len(tag)
            continue
        out.append(c)
        i += 1
    return "".join(out)
