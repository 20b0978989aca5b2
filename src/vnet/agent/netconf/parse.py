"""XML of NETCONF messages, parsed without holding up the other sessions.

A small message is parsed at once. A large one is parsed in a worker thread
with its own parser: lxml releases the GIL while libxml2 parses, so the event
loop keeps serving every other session meanwhile (issue 17, finding 4: a
50 MB edit used to stop every client for seconds).
"""

from __future__ import annotations

import asyncio

from lxml import etree

LARGE_MESSAGE = 256 * 1024  # bytes; below this a thread costs more than the parse


def new_parser() -> etree.XMLParser:
    """No entities, no network, libxml2's default limits on depth and text (huge_tree off)."""
    return etree.XMLParser(
        resolve_entities=False, no_network=True, huge_tree=False, remove_blank_text=False
    )


_PARSER = new_parser()  # only ever used on the event loop's thread


async def parse_message(message: bytes) -> etree._Element:
    """The message's root element; raises etree.XMLSyntaxError if it is not well-formed."""
    if len(message) < LARGE_MESSAGE:
        return etree.fromstring(message, _PARSER)
    return await asyncio.to_thread(etree.fromstring, message, new_parser())
