"""The one masking rule for every value written for others: the env job's events, the record, the archive.

A value is masked whole when its name looks like it holds a token, key, secret, password or
credential. Inside any value or text, the userinfo of a URL (`https://user:pass@host/` ->
`https://***@host/`), the values of secret-looking query parameters (`?token=***`,
`&X-Amz-Signature=***`) and NAME=VALUE assignments with secret-looking names are masked, the host
and the rest kept visible. Pure code for Python 3.9: no mindspore, no textual.
"""

from __future__ import annotations

import re
from typing import Any, List, Optional

MASK = "[masked]"  # a whole value; no angle brackets: it must stay visible in Markdown and valid inside SVG text
PART_MASK = "***"  # a part of a value (URL userinfo, a query value): the rest of the URL stays readable
# Markers a job may already have put in place of a value: never masked or hunted again.
MASK_MARKERS = frozenset((MASK, "<masked>", PART_MASK, "********"))

# Words that make a name secret-like, matched against the name's parts ("pwd" is not one: PWD is a path).
SECRET_WORDS = frozenset(
    (
        "token",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "credential",
        "credentials",
        "apikey",
        "auth",
        "authorization",
        "cookie",
    )
)
# 'key' alone is too common a field name ("key": "lr"); with another word (API_KEY) it is a secret.
PAIRED_WORDS = frozenset(("key",))
# A name ending in one of these describes something else (KeyError, TOKEN_COUNT, KEY_PATH).
NOT_SECRET_TAILS = frozenset(
    (
        "error",
        "exception",
        "warning",
        "id",
        "ids",
        "count",
        "file",
        "path",
        "dir",
        "name",
        "names",
        "len",
        "length",
        "size",
        "type",
        "url",
        "rule",
        "hint",
        "sock",
        "socket",
        "mode",
        "enabled",
        "required",
    )
)
# In a URL's query, shorter names carry secrets too: ?key=, ?sig= (Azure SAS), &X-Amz-Signature=.
QUERY_WORDS = SECRET_WORDS | frozenset(("key", "sig", "signature", "pwd", "pass", "accesskey", "sessionkey"))

# scheme://userinfo@ — the userinfo runs to the last @ before the host's /, ?, # or a space.
URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^\s/?#\"'<>\\]+)@")
# ?name=value, &name=value or ;name=value; the value stops at the next separator, a space or markup.
QUERY_PARAM = re.compile(r"(?P<lead>[?&;])(?P<name>[A-Za-z0-9_.\-]+)=(?P<value>[^&#;\s\"'<>\\]*)")
# NAME=VALUE or NAME: VALUE in free text (logs, argv strings, YAML).
# The value stops at markup characters so that masking text inside SVG or HTML keeps it well-formed.
ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.-])([A-Za-z_][A-Za-z0-9_.-]*)(\s*[=:]\s*)(\"[^\"<>]*\"|'[^'<>]*'|[^\s\"',;<>&]+)"
)


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


def secret_query_name(name: str) -> bool:
    """True for a query parameter that carries a secret: token, access_key, secret, signature, sig, key …"""
    parts = name_parts(name)
    joined = "".join(parts)
    return any(p in QUERY_WORDS for p in parts) or any(w in joined for w in ("apikey", "accesskey", "password"))


def _userinfo(match: re.Match[str]) -> str:
    if match.group("userinfo") in MASK_MARKERS:
        return match.group(0)
    return match.group("scheme") + PART_MASK + "@"


def _query(match: re.Match[str]) -> str:
    value = match.group("value")
    if not value or value in MASK_MARKERS or not secret_query_name(match.group("name")):
        return match.group(0)
    return match.group("lead") + match.group("name") + "=" + PART_MASK


def _assignment(match: re.Match[str]) -> str:
    value = match.group(3)
    if not secret_name(match.group(1)) or value.strip("\"'") in MASK_MARKERS:
        return match.group(0)
    quote = value[0] if value[:1] in ("'", '"') else ""
    return match.group(1) + match.group(2) + quote + MASK + quote


def mask_text(text: str) -> str:
    """Text with URL userinfo, secret query values and secret-named assignments masked."""
    if not text or ("=" not in text and ":" not in text):  # each pattern needs one ("://", "name=", "NAME: ")
        return text
    text = URL_USERINFO.sub(_userinfo, text)
    text = QUERY_PARAM.sub(_query, text)
    return ASSIGNMENT.sub(_assignment, text)


def mask_value(name: Optional[str], value: Any) -> Any:
    """A value as a record shows it: MASK for a secret-like name, else its text with the parts masked."""
    if value is None or value == "" or (isinstance(value, str) and value in MASK_MARKERS):
        return value
    if name is not None and secret_name(str(name)):
        return MASK
    return mask_text(value) if isinstance(value, str) else value


def secret_parts(text: str) -> List[str]:
    """The secret strings inside a text: URL passwords (or token userinfo), secret query values, assignments."""
    found: List[str] = []
    for match in URL_USERINFO.finditer(text):
        # The password only: a user name alone (ssh://ubuntu@host) would be hunted into every path.
        userinfo = match.group("userinfo")
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
    for match in QUERY_PARAM.finditer(text):
        if secret_query_name(match.group("name")):
            found.append(match.group("value"))
    for match in ASSIGNMENT.finditer(text):
        if secret_name(match.group(1)):
            found.append(match.group(3).strip("\"'"))
    return [f for f in found if f and f not in MASK_MARKERS]
