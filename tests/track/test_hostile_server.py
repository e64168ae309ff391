"""Trackers that cannot leak or hang runsnap (issue 37, class 6), against real HTTP servers on
127.0.0.1: a ``307`` redirect to another host never receives the credentials (urllib copies
``Authorization`` to the new request; MLflow's own client drops it, and so does runsnap), and a
server that drips its answer a byte at a time cannot keep runsnap past its timeout (a socket's
timeout bounds each read, not the exchange)."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator

import pytest

from runsnap.errors import TrackerError
from runsnap.track.web import request


class _Server:
    """A real HTTP server on 127.0.0.1 in a thread; ``seen`` holds each request's headers."""

    def __init__(self, handler: type[http.server.BaseHTTPRequestHandler]) -> None:
        self.seen: list[dict[str, str]] = []
        outer = self

        class Recording(handler):  # type: ignore[valid-type, misc]
            def log_message(self, *args: object) -> None:
                pass

            def parse_request(self) -> bool:
                ok = super().parse_request()
                outer.seen.append({k.lower(): v for k, v in self.headers.items()})
                return ok

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recording)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def other_host() -> Iterator[_Server]:
    server = _Server(_Answer)
    yield server
    server.close()


def _redirecting(to: str) -> type[http.server.BaseHTTPRequestHandler]:
    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(307)
            self.send_header("Location", to + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Redirect


@pytest.mark.parametrize("target", ["localhost", "127.0.0.1:other-port"])
def test_a_redirect_to_another_host_gets_no_credentials(other_host: _Server, target: str) -> None:
    to = f"http://localhost:{other_host.port}" if target == "localhost" else \
        f"http://127.0.0.1:{other_host.port}"
    first = _Server(_redirecting(to))
    try:
        body = request("GET", f"http://127.0.0.1:{first.port}/api/2.0/mlflow/runs/get",
                       timeout=10, headers={"Authorization": "Bearer s3cr3t-tracker-token",
                                            "Cookie": "session=abc", "X-Run": "kept"})
    finally:
        first.close()
    assert body == b'{"ok": true}'
    assert first.seen[0]["authorization"] == "Bearer s3cr3t-tracker-token"
    assert len(other_host.seen) == 1
    assert "authorization" not in other_host.seen[0] and "cookie" not in other_host.seen[0]
    assert other_host.seen[0]["x-run"] == "kept"


def test_a_redirect_on_the_same_host_keeps_the_credentials() -> None:
    class SelfRedirect(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/moved":
                _Answer.do_GET(self)  # type: ignore[arg-type]
                return
            self.send_response(307)
            self.send_header("Location", "/moved")
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = _Server(SelfRedirect)
    try:
        request("GET", f"http://127.0.0.1:{server.port}/x", timeout=10,
                headers={"Authorization": "Bearer t"})
    finally:
        server.close()
    assert [h.get("authorization") for h in server.seen] == ["Bearer t", "Bearer t"]


class _Drip(http.server.BaseHTTPRequestHandler):
    """Answers at once, then sends its body a byte every 0.3 s (never a pause long enough for
    a socket timeout)."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        try:
            for _ in range(1000):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.3)
        except OSError:
            pass


def test_a_dripping_server_cannot_hold_runsnap_past_its_timeout() -> None:
    server = _Server(_Drip)
    try:
        t0 = time.monotonic()
        with pytest.raises(TrackerError, match="no complete answer within 1.5 s"):
            request("GET", f"http://127.0.0.1:{server.port}/api", timeout=1.5)
        took = time.monotonic() - t0
    finally:
        server.close()
    assert took < 5, took
