"""Which environment variables a record may show, and how their values are masked.

One rule for every record (env job, session export): names come from an allow-list
(ASCEND_*, GLOG_*, MS_*, LD_LIBRARY_PATH, PYTHONPATH, PATH) and every value goes through
`workbench.masking.rule.mask_value` (secret-like names masked whole, URL credentials and secret query
values masked in place). Pure code for Python 3.9: no mindspore, no textual.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from workbench.masking.rule import MASK, mask_value, secret_name  # noqa: F401  (MASK, secret_name: re-exported)

ALLOW_PREFIXES = ("ASCEND_", "GLOG_", "MS_")
ALLOW_NAMES = ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH")


def allowed_name(name: str) -> bool:
    """True for variables a record may show: ASCEND_*, GLOG_*, MS_*, PATH, LD_LIBRARY_PATH, PYTHONPATH."""
    return name in ALLOW_NAMES or any(name.startswith(p) for p in ALLOW_PREFIXES)


def record_env(environ: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """Allow-listed variables only, sorted by name, values masked by the one rule."""
    env: Mapping[str, Any] = environ or {}
    return {str(name): mask_value(str(name), env[name]) for name in sorted(env) if allowed_name(str(name))}


def masked_names(environ: Optional[Mapping[str, Any]]) -> List[str]:
    """Names whose values `record_env` masks, whole or in part (for saying so in a report)."""
    env: Mapping[str, Any] = environ or {}
    return [
        str(name) for name in sorted(env) if allowed_name(str(name)) and mask_value(str(name), env[name]) != env[name]
    ]
