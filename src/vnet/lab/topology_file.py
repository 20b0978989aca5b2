"""Read a lab topology file (YAML) into a checked Topology, with errors at file:line:column.

ruamel.yaml keeps the position of every key and item, which is what lets a
problem found deep in the model point at the line a person has to change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.composer import Composer, ComposerError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent
from ruamel.yaml.scanner import RoundTripScanner, ScannerError

from vnet.model import Problem, Topology, TopologyError, build_topology
from vnet.model.errors import Loc

# A topology of 10k hosts is about 1 MB; far larger is a mistake or an attack.
MAX_TOPOLOGY_BYTES = 16 * 1024 * 1024
# Each problem line is cut to this, so no value, however long, is echoed in full.
MAX_LINE_CHARS = 300
# Levels of nested collections; a topology has fewer than ten.
MAX_NESTING = 64


class _NoAliasComposer(Composer):  # type: ignore[misc]
    """Refuses `*alias`: expanding nested aliases costs memory exponential in the file's size
    (a 400-byte "billion laughs" file takes GBs), and a topology never needs them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.parser.check_event(AliasEvent):
            event = self.parser.get_event()
            raise ComposerError(
                None, None, "aliases (*name) are not allowed in topology files", event.start_mark
            )
        return super().compose_node(parent, index)


class _TooDeep(ScannerError):
    pass


class _BoundedScanner(RoundTripScanner):
    """Refuses nesting deeper than MAX_NESTING where it starts: the scanner's work grows with
    the square of the number of open `[`/`{` (100k of them took 20 s), and composing the tree
    recurses once per level."""

    def _deeper(self) -> None:
        if len(self.indents) + self.flow_level >= MAX_NESTING:
            raise _TooDeep(None, None, "nested too deeply", self.reader.get_mark())

    def fetch_flow_collection_start(self, token: Any, to_push: str) -> None:
        self._deeper()
        super().fetch_flow_collection_start(token, to_push)

    def add_indent(self, column: int) -> bool:
        if self.indent < column:
            self._deeper()
        return bool(super().add_indent(column))


def _short(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else f"{line[:MAX_LINE_CHARS]}... (cut)"


class TopologyFileError(ValueError):
    """Every problem of a file, each as 'file:line:col: where: why'."""

    def __init__(self, path: Path, lines: list[str]):
        self.path = path
        self.lines = lines = [_short(line) for line in lines]
        body = "\n".join(f"  {line}" for line in lines)
        super().__init__(
            f"{path}: rejected, nothing was created ({len(lines)} problem(s)):\n{body}"
        )


def _plain(node: Any) -> Any:
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


def position(root: Any, loc: Loc) -> tuple[int, int] | None:
    """1-based (line, column) of the deepest YAML node that `loc` reaches."""
    node, found = root, None
    for part in loc:
        if isinstance(node, CommentedMap) and isinstance(part, str) and part in node:
            line, col = node.lc.key(part)
            found = (line + 1, col + 1)
            node = node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and part < len(node):
            line, col = node.lc.item(part)
            found = (line + 1, col + 1)
            node = node[part]
        else:
            break
    return found


def _where(path: Path, root: Any, problem: Problem) -> str:
    pos = position(root, problem.loc)
    at = f"{path}:{pos[0]}:{pos[1]}" if pos else str(path)
    return f"{at}: {problem}"


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.Composer = _NoAliasComposer
    yaml.Scanner = _BoundedScanner
    return yaml


def parse_topology_text(text: str, path: Path) -> Topology:
    try:
        root = _yaml().load(text)
    except _TooDeep as err:
        mark = err.problem_mark
        at = f"{path}:{mark.line + 1}:{mark.column + 1}"
        problem = f"nested more than {MAX_NESTING} levels deep: too deep to be a topology"
        raise TopologyFileError(path, [f"{at}: {problem}"]) from None
    except MarkedYAMLError as err:
        mark = err.problem_mark
        at = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise TopologyFileError(path, [f"{at}: not valid YAML: {err.problem}"]) from None
    except YAMLError as err:  # e.g. control characters, which the reader refuses
        problem = str(err).splitlines()[0]
        raise TopologyFileError(path, [f"{path}: not valid YAML: {problem}"]) from None
    if not isinstance(root, dict):
        raise TopologyFileError(path, [f"{path}: expected a mapping with hosts, networks, ..."])
    try:
        return build_topology(_plain(root), source=str(path))
    except TopologyError as err:
        raise TopologyFileError(path, [_where(path, root, p) for p in err.problems]) from None


def load_topology(path: str | Path) -> Topology:
    path = Path(path)
    try:
        with path.open("rb") as file:
            data = file.read(MAX_TOPOLOGY_BYTES + 1)
    except OSError as err:
        raise TopologyFileError(path, [f"{path}: cannot read: {err.strerror}"]) from None
    if len(data) > MAX_TOPOLOGY_BYTES:
        raise TopologyFileError(
            path, [f"{path}: larger than the limit of {MAX_TOPOLOGY_BYTES} bytes for a topology"]
        )
    return parse_topology_text(_text(data, path), path)


def _text(data: bytes, path: Path) -> str:
    """The file as text; a binary or non-UTF-8 file is one problem with its position."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        before = data[: err.start]
        line = before.count(b"\n") + 1
        col = err.start - (before.rfind(b"\n") + 1) + 1
        byte = data[err.start]
        raise TopologyFileError(
            path,
            [f"{path}:{line}:{col}: not UTF-8 text (byte 0x{byte:02x}); is this a topology file?"],
        ) from None
