"""JSON over HTTP with a hard time limit, and every failure as one line.

runsnap talks to an MLflow tracking server through its REST API with the standard library, not
with the ``mlflow`` client: the client costs seconds to import on the way to a launch, and retries
a server that does not answer for minutes (``MLFLOW_HTTP_REQUEST_MAX_RETRIES``), where runsnap
must give up after ``--track-timeout``.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request

from runsnap.errors import TrackerError
from runsnap.track.base import clean_url

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["request", "request_json"]

#: The most runsnap reads of one answer (a snapshot is far smaller; a run list with many tags
#: is too).
MAX_ANSWER = 64 << 20


def request(method: str, url: str, *, data: bytes | None = None, timeout: float,
            headers: Mapping[str, str] | None = None, content_type: str = "") -> bytes:
    """The body of the answer to ``method url``; :class:`TrackerError` (one line, without
    credentials) when there is no answer within ``timeout`` seconds, no connection, or an HTTP
    error status."""

    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if content_type:
        req.add_header("Content-Type", content_type)
    where = clean_url(url)
    try:
        body = _within(timeout, lambda: _exchange(req, timeout), where)
    except urllib.error.HTTPError as exc:
        detail = _detail(exc)
        raise TrackerError(f"{where} refused: HTTP {exc.code} {exc.reason}"
                           f"{': ' + detail if detail else ''}") from None
    except TimeoutError:
        raise TrackerError(f"{where}: no answer within {timeout:g} s") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, (TimeoutError, socket.timeout)):
            raise TrackerError(f"{where}: no answer within {timeout:g} s") from None
        text = getattr(reason, "strerror", None) or str(reason)
        raise TrackerError(f"{where}: cannot connect: {text}") from None
    except (OSError, ValueError) as exc:  # reset, bad status line, malformed URL
        raise TrackerError(f"{where}: {type(exc).__name__}: {exc}") from None
    if len(body) > MAX_ANSWER:
        raise TrackerError(f"{where}: answer larger than {MAX_ANSWER >> 20} MiB")
    return body


#: Headers that carry credentials: never sent on to another host by a redirect.
_CREDENTIALS = ("authorization", "proxy-authorization", "cookie")


def _exchange(req: Any, timeout: float) -> bytes:
    """Open ``req`` (redirects followed, credentials kept to the host they were meant for)
    and read the answer."""
    opener = urllib.request.build_opener(_redirects())
    with opener.open(req, timeout=timeout) as answer:
        return answer.read(MAX_ANSWER + 1)


def _redirects() -> Any:
    """A redirect handler that drops the credentials headers when a redirect leads to another
    scheme, host or port. urllib copies every header to the new request (a ``307`` to another
    host would receive ``Authorization: Bearer ...``); MLflow's own client (``requests``)
    drops them, and so does this."""

    def origin(url: str) -> tuple[str, str, int | None]:
        parts = urllib.parse.urlsplit(url)
        return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port

    class SameHostCredentials(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                             newurl: str) -> Any:
            new = super().redirect_request(req, fp, code, msg, headers, newurl)
            if new is not None and origin(newurl) != origin(req.full_url):
                for name in [h for h in new.headers if h.lower() in _CREDENTIALS]:
                    new.remove_header(name)
            return new

    return SameHostCredentials()


def _within(timeout: float, work: Any, where: str) -> bytes:
    """``work()``'s answer, or :class:`TrackerError` once ``timeout`` seconds have passed in
    all: a socket's timeout bounds each read, not the exchange (a server that sends a byte
    every half second would hold runsnap for as long as it likes). The work goes on in a
    daemon thread that is left behind when the time is up."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["body"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="runsnap-tracker-request", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TrackerError(f"{where}: no complete answer within {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box["body"]


def _detail(exc: Any) -> str:
    """The first line of an error answer's message (MLflow's ``message`` field), short."""
    try:
        raw = exc.read(4096)
    except OSError:
        return ""
    try:
        message = json.loads(raw).get("message", "")
    except (ValueError, AttributeError):
        message = raw.decode("utf-8", "replace")
    line = str(message).strip().splitlines()[0] if str(message).strip() else ""
    return "".join(c if c.isprintable() else "?" for c in line)[:200]


def request_json(method: str, url: str, payload: Mapping[str, Any] | None = None, *,
                 timeout: float, headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``payload`` sent as JSON, the JSON answer returned (an object)."""
    data = None if payload is None else json.dumps(payload).encode("utf-8")
    body = request(method, url, data=data, timeout=timeout, headers=headers,
                   content_type="application/json" if data is not None else "")
    try:
        answer = json.loads(body or b"{}")
    except ValueError:
        raise TrackerError(f"{clean_url(url)}: the answer is not JSON") from None
    if not isinstance(answer, dict):
        raise TrackerError(f"{clean_url(url)}: the answer is not a JSON object")
    return answer
