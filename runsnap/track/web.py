"""JSON over HTTP with a hard time limit, and every failure as one line.

runsnap talks to an MLflow tracking server through its REST API with the standard library, not
with the ``mlflow`` client: the client costs seconds to import on the way to a launch, and retries
a server that does not answer for minutes (``MLFLOW_HTTP_REQUEST_MAX_RETRIES``), where runsnap
must give up after ``--track-timeout``.
"""

from __future__ import annotations

import json
import socket
import urllib.error
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
        with urllib.request.urlopen(req, timeout=timeout) as answer:  # noqa: S310 - http(s) only
            body: bytes = answer.read(MAX_ANSWER + 1)
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
