"""Subtree filtering (RFC 6241 section 6) over XML data trees."""

from __future__ import annotations

import copy
from typing import Any

from lxml import etree


def _split(tag: str) -> tuple[str | None, str]:
    if tag.startswith("{"):
        ns, name = tag[1:].split("}", 1)
        return ns, name
    return None, tag


def _matches(filter_el: etree._Element, data_el: etree._Element) -> bool:
    """Same local name; a filter element without a namespace matches any namespace."""
    f_ns, f_name = _split(filter_el.tag)
    d_ns, d_name = _split(data_el.tag)
    return f_name == d_name and (f_ns is None or f_ns == d_ns)


def _elements(parent: etree._Element) -> list[etree._Element]:
    return [c for c in parent if isinstance(c.tag, str)]


def _text(el: etree._Element) -> str:
    return (el.text or "").strip()


def _filter(data_el: etree._Element, f_el: etree._Element) -> etree._Element | None:
    f_children = _elements(f_el)
    if not f_children:
        if _text(f_el):  # content match on a leaf
            return copy.deepcopy(data_el) if _text(data_el) == _text(f_el) else None
        return copy.deepcopy(data_el)  # selection node: the whole subtree
    content = [c for c in f_children if not _elements(c) and _text(c)]
    if not all(_has_content(data_el, c) for c in content):
        return None
    selections = [c for c in f_children if c not in content]
    out = etree.Element(data_el.tag, attrib=dict(data_el.attrib), nsmap=data_el.nsmap)
    if not selections:
        out.extend(copy.deepcopy(d) for d in _elements(data_el))
        return out
    selected = _copy_selected(data_el, content, selections, out)
    return out if selected else None


def _has_content(data_el: etree._Element, c: etree._Element) -> bool:
    """Does `data_el` have a child that matches the content-match node `c`?"""
    return any(_matches(c, d) and _text(d) == _text(c) for d in _elements(data_el))


def _copy_selected(
    data_el: etree._Element,
    content: list[etree._Element],
    selections: list[etree._Element],
    out: etree._Element,
) -> bool:
    """Copy into `out` the children of `data_el` that the filter keeps; did a selection
    node select anything?"""
    selected = False
    for d in _elements(data_el):
        if any(_matches(c, d) for c in content):
            out.append(copy.deepcopy(d))
            continue
        # Sibling selections of one list (<router><name>a</name></router><router>...)
        # each select their entries: the first that keeps `d` wins.
        kept = next(
            (k for s in selections if _matches(s, d) and (k := _filter(d, s)) is not None), None
        )
        if kept is not None:
            out.append(kept)
            selected = True
    return selected


def apply_filter(data: list[etree._Element], filter_el: etree._Element) -> list[etree._Element]:
    """The parts of `data` (top-level elements) that the filter selects."""
    f_top = _elements(filter_el)
    if not f_top:
        return []  # an empty filter selects nothing (RFC 6241 6.4.2)
    out = []
    for d in data:
        for f in f_top:
            if _matches(f, d):
                kept = _filter(d, f)
                if kept is not None:
                    out.append(kept)
                break
    return out


def selected_tops(filter_el: etree._Element | None) -> set[str] | None:
    """The local names of the top-level members a subtree filter can select (None: any)."""
    if filter_el is None or filter_el.get("type", "subtree") != "subtree":
        return None
    return {etree.QName(c).localname for c in _elements(filter_el)}


def prune_tree(
    tree: dict[str, Any], filter_el: etree._Element | None, routers: set[str] | None
) -> dict[str, Any]:
    """The members of an RFC 7951 tree a subtree filter can select, before encoding it.

    Only top-level members the filter names, and of the routers only `routers`
    (None: all): the filter drops the rest anyway, so a question about one VR
    no longer encodes, parses and copies the other 999. A shallow copy; the
    tree itself is not changed.
    """
    tops = selected_tops(filter_el)
    if tops is None:
        return tree
    out = {k: v for k, v in tree.items() if k.partition(":")[2] in tops}
    for member, value in out.items():
        if member.endswith(":routers") and routers is not None and isinstance(value, dict):
            kept = [r for r in value.get("router", []) if r.get("name") in routers]
            out[member] = {**value, "router": kept}
    return out
