"""Which environment variables a record may show, and which values it must mask.

One rule for every record (env job, session export): names come from an allow-list
(ASCEND_*, GLOG_*, MS_*, LD_LIBRARY_PATH, PYTHONPATH, PATH) and the value of any name that
looks like it holds a token, key, secret, password or credential is replaced by MASK.
Pure code for Python 3.9: no mindspore, no textual.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional

MASK = "[masked]"  # no angle brackets: it must stay visible in Markdown and valid inside SVG text
ALLOW_PREFIXES = ("ASCEND_", "GLOG_", "MS_")
ALLOW_NAMES = ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH")
# Words that make a name secret-like, matched against the name's parts ("pwd" is not one: PWD is a path).
SECRET_WORDS = frozenset((
    "token", "secret", "password", "passwd", "passphrase", "credential", "credentials",
    "apikey", "auth", "authorization", "cookie",
))
# 'key' alone is too common a field name ("key": "lr"); with another word (API_KEY) it is a secret.
PAIRED_WORDS = frozenset(("key",))
# A name ending in one of these describes something else (KeyError, TOKEN_COUNT, KEY_PATH).
NOT_SECRET_TAILS = frozenset((
    "error", "exception", "warning", "id", "ids", "count", "file", "path", "dir", "name", "names",
    "len", "length", "size", "type", "url", "rule", "hint", "sock", "socket", "mode", "enabled", "required",
))


def name_parts(name: str) -> List[str]:
    """Lower-case words of a name: 'ASCEND_API_KEY' -> ['ascend', 'api', 'key'], 'apiKey' -> ['api', 'key']."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(name))
    return [p.lower() for p in re.split(r"[^A-Za-z0-9]+", spaced) if p]


def secret_name(name: str) -> bool:
    """True when a name looks like it holds a token, key, secret, password or credential."""
    parts = name_parts(name)
    if not parts or parts[-1] in NOT_SECRET_TAILS:
        return False
    if any(p in SECRET_WORDS for p in parts) or "apikey" in "".join(parts):
        return True
    return len(parts) >= 2 and any(p in PAIRED_WORDS for p in parts)


def allowed_name(name: str) -> bool:
    """True for variables a record may show: ASCEND_*, GLOG_*, MS_*, PATH, LD_LIBRARY_PATH, PYTHONPATH."""
    return name in ALLOW_NAMES or any(name.startswith(p) for p in ALLOW_PREFIXES)


def mask_value(name: str, value: Optional[str]) -> Optional[str]:
    """The value as a record shows it: MASK for a secret-like name with a non-empty value."""
    return MASK if secret_name(name) and value not in (None, "") else value


def record_env(environ: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """Allow-listed variables only, sorted by name, secret-like values masked."""
    return {str(name): mask_value(str(name), environ[name])
            for name in sorted(environ or {}) if allowed_name(str(name))}


def masked_names(environ: Optional[Mapping[str, Any]]) -> List[str]:
    """Names whose values `record_env` masks (for saying so in a report)."""
    return [str(name) for name in sorted(environ or {})
            if allowed_name(str(name)) and mask_value(str(name), environ[name]) == MASK]
