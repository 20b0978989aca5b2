"""The documentation describes the repository and nothing outside it.

README.md, docs/*.md and the crates' READMEs are the front door: a reader who
cloned the repository has only the repository. So they never point at files
outside it (a `../shared` folder, the papers' `seeds/` copies), never carry a
tracker's internal references ("issue 14", "(issues 11, 17)"), and every
relative Markdown link (and its #anchor, for Markdown targets) leads to
something that exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *ROOT.glob("*/README.md")],
)

# What points outside the repository, and what names an internal tracker entry.
OUTSIDE = re.compile(r"\.\./shared|shared/seeds|seeds/|ARCHITECTURE\.md|RECIPES")
ISSUE = re.compile(r"\bissues?\s+#?\d+|\bthe issue's\b|\bof the issue\b", re.IGNORECASE)
# [text](target) or ![alt](target "title"); the target up to whitespace or ')'
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+).*?\1")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


@dataclass(frozen=True)
class Line:
    path: Path
    number: int
    text: str
    in_code: bool  # inside a fenced code block

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.number}"


def lines(path: Path) -> list[Line]:
    """The file's lines, each marked whether it sits in a fenced code block."""
    out: list[Line] = []
    in_code = False
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(text):
            out.append(Line(path, number, text, True))
            in_code = not in_code
            continue
        out.append(Line(path, number, text, in_code))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file, with GitHub's -1, -2 for repeats."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in lines(path):
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line.text)
        if line.in_code or not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def link_targets(path: Path) -> list[tuple[Line, str]]:
    """(line, target) of every Markdown link outside code blocks and code spans."""
    found = []
    for line in lines(path):
        if line.in_code:
            continue
        for match in LINK.finditer(CODE_SPAN.sub("", line.text)):
            found.append((line, match.group(1)))
    return found


def link_problem(source: Path, target: str, root: Path = ROOT) -> str | None:
    """Why a relative link from `source` is broken, or None when it leads somewhere real."""
    if SCHEME.match(target):
        return None  # http:, https:, mailto: lead outside on purpose
    file_part, _, anchor = target.partition("#")
    resolved = (source.parent / unquote(file_part)).resolve() if file_part else source
    if not resolved.is_relative_to(root):
        return "points outside the repository"
    if not resolved.exists():
        return "no such file"
    if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
        return f"no heading with anchor #{anchor} in {resolved.relative_to(root)}"
    return None


def matching(path: Path, pattern: re.Pattern[str]) -> list[str]:
    """`file:line: text` of every line of `path` that `pattern` finds something in."""
    found = [line for line in lines(path) if pattern.search(line.text)]
    return [f"{line.where()}: {line.text.strip()}" for line in found]


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in paths]


def test_the_front_door_is_covered():
    names = {p.relative_to(ROOT).as_posix() for p in DOCS}
    assert {"README.md", "docs/architecture.md", "docs/papers.md"} <= names


@pytest.mark.parametrize("path", DOCS, ids=_ids(DOCS))
def test_no_pointer_outside_the_repository(path: Path):
    bad = matching(path, OUTSIDE)
    assert not bad, "a doc points outside the repository:\n" + "\n".join(bad)


@pytest.mark.parametrize("path", DOCS, ids=_ids(DOCS))
def test_no_internal_issue_references(path: Path):
    bad = matching(path, ISSUE)
    assert not bad, "say what is meant instead of an issue number:\n" + "\n".join(bad)


@pytest.mark.parametrize("path", DOCS, ids=_ids(DOCS))
def test_relative_links_lead_to_files_that_exist(path: Path):
    bad = [
        f"{line.where()}: ({target}) {problem}"
        for line, target in link_targets(path)
        if (problem := link_problem(path, target))
    ]
    assert not bad, "broken links:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see [agent](agent.md)", ["agent.md"]),
        ("![png](console/topology.png)", ["console/topology.png"]),
        ('[a](b.md#part "title") and [c](https://x.org/)', ["b.md#part", "https://x.org/"]),
        ("`[not](a-link.md)` but [yes](y.md)", ["y.md"]),
    ],
)
def test_link_parsing(tmp_path: Path, text: str, expected: list[str]):
    doc = tmp_path / "d.md"
    doc.write_text(f"{text}\n```\n[in code](ignored.md)\n```\n")
    assert [target for _, target in link_targets(doc)] == expected


def test_the_checks_catch_what_they_are_for(tmp_path: Path):
    assert ISSUE.search("as vnet did before issue 14")
    assert ISSUE.search("the agent's goals (issues 11, 17)")
    assert ISSUE.search("17 of the 25 visits met the issue's 1 s goal")
    assert not ISSUE.search("an issue the tests found")
    assert OUTSIDE.search("the papers in `../shared/seeds/`")
    doc = tmp_path / "d.md"
    doc.write_text("# A `b` c: d\n\n## A `b` c: d\n")
    assert anchors(doc) == {"a-b-c-d", "a-b-c-d-1"}
    assert link_problem(doc, "missing.md", tmp_path) == "no such file"
    assert link_problem(doc, "../d.md", tmp_path) == "points outside the repository"
    assert link_problem(doc, "d.md#a-b-c-d-1", tmp_path) is None
    assert link_problem(doc, "#nowhere", tmp_path) == "no heading with anchor #nowhere in d.md"
