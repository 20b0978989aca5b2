"""A stand-in controller for the client's and the CLI's unit tests: a stdlib HTTP server on
127.0.0.1 with canned answers per "METHOD path", recording what it was sent."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

VIEW = {
    "tenant": "red",
    "name": "c1",
    "status": "established",
    "a": "red-a",
    "b": "red-b",
    "bandwidth": 20_000_000,
    "path": ["h1", "h2"],
    "hops": [
        {"host": "h1", "router": "red-r1"},
        {"host": "h2", "router": "red-r2", "sid": "fc00::1"},
    ],
}
NO_CAPACITY = {
    "status": 409,
    "code": "no-capacity",
    "reason": "no path has 900mbit free",
    "shortfalls": [
        {
            "link": "h1-h2",
            "direction": "h1 -> h2",
            "requested_bps": 900_000_000,
            "free_bps": 100_000_000,
            "missing_bps": 800_000_000,
        },
        {
            "link": "h1-h3",
            "direction": "h1 -> h3",
            "requested_bps": 900_000_000,
            "free_bps": 0,
            "missing_bps": 900_000_000,
        },
    ],
}


class FakeController(BaseHTTPRequestHandler):
    """Answers (status, body, headers) by "METHOD path"; records what it was sent."""

    answers: ClassVar[dict[str, tuple[int, Any, dict[str, str]]]] = {}
    seen: ClassVar[list[dict[str, Any]]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        self.seen.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
        )
        status, payload, headers = self.answers.get(
            f"{self.command} {self.path}",
            (404, {"status": 404, "code": "not-found", "reason": "?"}, {}),
        )
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(status)
        ctype = "text/plain" if isinstance(payload, str) else "application/json"
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = _answer

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve() -> Iterator[str]:
    """The fake's base URL while the block runs, with no answers and nothing seen yet."""
    FakeController.answers, FakeController.seen = {}, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeController)
    # shutdown() waits for the loop's next poll: half a second by default, in every test
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
