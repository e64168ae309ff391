"""``[env]``: the child's complete environment, exactly as it will be passed.

Values are kept verbatim (undecodable bytes too, through the snapshot codec); secrets are
replaced with fingerprints by the redaction pass, not here.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runsnap.capturing.context import CaptureContext
    from runsnap.snapshot.shapes import EnvSection


def collect(ctx: CaptureContext) -> EnvSection:
    """``{"count", "vars": {name: value}, "errors"}``, names sorted."""
    env = dict(ctx.env)
    return {"count": len(env), "vars": {k: env[k] for k in sorted(env)}, "errors": []}
