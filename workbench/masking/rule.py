"""The one masking rule for every value written for others: the env job's events, the record, the archive.

A value is masked whole when its name looks like it holds a token, key, secret, password or
credential. Inside any value or text, the userinfo of a URL (`https://user:pass@host/` ->
`https://***@host/`), the values of secret-looking query parameters (`?token=***`,
`&X-Amz-Signature=***`) and NAME=VALUE assignments with secret-looking names are masked, the host
and the rest kept visible. Pure code for Python 3.9: no mindspore, no textual.
"""

from __future__ import annotations

import functools
import re
from typing import Any, List, Optional, Tuple

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

# scheme:// — where a URL's authority starts; its userinfo is found by `userinfo_spans`, not by a pattern alone.
URL_SCHEME = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://")
# The user name of a userinfo: no separator, no ':' (the password follows it) and no '@'.
URL_USER = re.compile(r"[^\s/?#:@\"'<>\\]*")
# What surely ends a URL in free text, whatever the password holds: quotes, markup, a line end, another URL.
URL_END = re.compile(r"[\"'<>\r\n]|[A-Za-z][A-Za-z0-9+.\-]*://")
HOST_START = re.compile(r"[A-Za-z0-9\[_]")
PORT_ONLY = re.compile(r"[0-9]{1,5}[/?#].*", re.S)  # host:8080/path@x is a port and a path, not a password
URL_SPAN_MAX = 2048
# ?name=value, &name=value or ;name=value; the value stops at the next separator, a space or markup.
QUERY_PARAM = re.compile(r"(?P<lead>[?&;])(?P<name>[A-Za-z0-9_.\-]+)=(?P<value>[^&#;\s\"'<>\\]*)")
# NAME=VALUE or NAME: VALUE in free text (logs, argv strings, YAML).
# The value stops at markup characters so that masking text inside SVG or HTML keeps it well-formed.
ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.-])([A-Za-z_][A-Za-z0-9_.-]*)(\s*[=:]\s*)(\"[^\"<>]*\"|'[^'<>]*'|[^\s\"',;<>&]+)"
)
# HTTP authentication schemes: the word after `Authorization:` is the scheme, the credentials follow it.
AUTH_SCHEMES = frozenset(
    ("bearer", "basic", "digest", "token", "negotiate", "ntlm", "apikey", "bot", "hoba", "mutual", "aws4-hmac-sha256")
)
# Authorization: Bearer <creds>, Proxy-Authorization: Basic <creds>, "authorization": "Token <creds>" ...
AUTH_HEADER = re.compile(
    r"(?i)(?P<lead>\b(?:proxy-)?authori[sz]ation[\"']?\s*[:=]\s*[\"']?)(?P<scheme>[A-Za-z][A-Za-z0-9-]*)"
    r"(?P<gap>[ \t]+)(?P<creds>[^\s\"'<>,;]+)"
)
AUTH_WORD = re.compile(r"(?i)authori[sz]ation")  # what AUTH_HEADER needs, found faster alone
DASH_LETTER = re.compile(r"-[A-Za-z]")  # what OPTION and GLUED_P need
# A bearer token written without its header (`-H "Bearer ey…"`, `token type Bearer ey…`).
BEARER = re.compile(r"(?P<lead>\bBearer[ \t]+)(?P<creds>[A-Za-z0-9._~+/=-]{8,})")
# "name": "value" or 'name': 'value' (JSON, Python reprs, YAML flow) in free text: secret names mask the value.
QUOTED_PAIR = re.compile(
    r"(?P<q>[\"'])(?P<name>[A-Za-z_][A-Za-z0-9_.\- ]{0,80})(?P=q)(?P<sep>\s*[:=]\s*)"
    r"(?P<value>\"(?:[^\"\\\r\n]|\\.)*\"|'(?:[^'\\\r\n]|\\.)*'|[A-Za-z0-9_.+\-/=]+)"
)
# Command-line options: --password=VALUE, --api-key VALUE, -token VALUE (a value never starts with '-').
OPTION = re.compile(
    r"(?<![\w-])(?P<flag>--?[A-Za-z][A-Za-z0-9_-]*)(?P<sep>=|[ \t]+)(?!-)"
    r"(?P<value>\"[^\"\r\n<>]*\"|'[^'\r\n<>]*'|[^\s\"'<>;&|]+)"
)
# Tools that take a password glued to -p (mysql -pSECRET) or after it (sshpass -p SECRET).
GLUED_P = re.compile(
    r"(?P<lead>\b(?:mysql\w*|mariadb\w*)\b[^\r\n|;&]*?[ \t]-p)(?P<value>[^\s\"'<>;&|]+)"
    r"|(?P<lead2>\bsshpass\b[^\r\n|;&]*?[ \t]-p[ \t]*)(?P<value2>[^\s\"'<>;&|]+)"
)


def name_parts(name: str) -> List[str]:
    """Lower-case words of a name: 'ASCEND_API_KEY' -> ['ascend', 'api', 'key'], 'apiKey' -> ['api', 'key']."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(name))
    return [p.lower() for p in re.split(r"[^A-Za-z0-9]+", spaced) if p]


@functools.lru_cache(maxsize=4096)  # a picture's pass meets its few attribute names ~3 000 times (x="…", fill="…")
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


def userinfo_spans(text: str) -> List[Tuple[int, int, Optional[str]]]:
    """(start, end, password or None) of each URL userinfo in a text, by RFC 3986 read for people's mistakes.

    The userinfo is what lies between `scheme://` and the last `@` before the host: a password may hold
    `/`, `?`, `#`, `@` or spaces unescaped. A space ends it once an `@` has been seen (the host follows
    that `@`), so a later e-mail address is not taken in; `host:8080/path@x` is a port, not a password.
    """
    spans: List[Tuple[int, int, Optional[str]]] = []
    for scheme in URL_SCHEME.finditer(text):
        start = scheme.end()
        if spans and start < spans[-1][1]:
            continue
        # From the end of the user name: `user://…@host` (a password starting with //) is not a second URL.
        user_end = start + len(URL_USER.match(text, start).group(0))  # type: ignore[union-attr]  # * matches empty
        stop = URL_END.search(text, user_end, min(len(text), start + URL_SPAN_MAX))
        segment = text[start : stop.start() if stop else min(len(text), start + URL_SPAN_MAX)]
        user = URL_USER.match(segment).group(0)  # type: ignore[union-attr]  # the pattern matches "" at least
        rest = segment[len(user) :]
        if rest.startswith("@"):
            if user and HOST_START.match(rest, 1):
                spans.append((start, start + len(user), None))
            continue
        if not rest.startswith(":"):
            continue
        first_at = segment.find("@", len(user))
        if first_at < 0:
            continue
        blank = re.search(r"\s", segment[first_at:])
        if blank:
            segment = segment[: first_at + blank.start()]
        at = max(
            (i for i in range(first_at, len(segment)) if segment[i] == "@" and HOST_START.match(segment, i + 1)),
            default=-1,
        )
        if at < 0:
            continue
        password = segment[len(user) + 1 : at]
        if PORT_ONLY.fullmatch(password):
            continue
        spans.append((start, start + at, password))
    return spans


def _mask_userinfo(text: str) -> str:
    out, last = [], 0
    for start, end, _ in userinfo_spans(text):
        if text[start:end] in MASK_MARKERS:
            continue
        out.append(text[last:start] + PART_MASK)
        last = end
    return "".join(out) + text[last:] if out else text


def _query(match: re.Match[str]) -> str:
    value = match.group("value")
    if not value or value in MASK_MARKERS or not secret_query_name(match.group("name")):
        return match.group(0)
    return match.group("lead") + match.group("name") + "=" + PART_MASK


def _assignment(match: re.Match[str]) -> str:
    value = match.group(3)
    bare = value.strip("\"'")
    if not secret_name(match.group(1)) or bare in MASK_MARKERS or bare.lower() in AUTH_SCHEMES:
        return match.group(0)
    quote = value[0] if value[:1] in ("'", '"') else ""
    return match.group(1) + match.group(2) + quote + MASK + quote


def _auth_header(match: re.Match[str]) -> str:
    if match.group("scheme").lower() not in AUTH_SCHEMES or match.group("creds") in MASK_MARKERS:
        return match.group(0)
    return match.group("lead") + match.group("scheme") + match.group("gap") + MASK


def _bearer(match: re.Match[str]) -> str:
    return match.group(0) if match.group("creds") in MASK_MARKERS else match.group("lead") + MASK


def _quoted_value(value: str) -> Tuple[str, str]:
    """(quote, content) of a quoted or bare value."""
    if value[:1] in ("'", '"') and len(value) >= 2:
        return value[0], value[1:-1]
    return "", value


def _quoted_pair(match: re.Match[str]) -> str:
    quote, content = _quoted_value(match.group("value"))
    if not content or content in MASK_MARKERS or not secret_name(match.group("name")):
        return match.group(0)
    q = match.group("q")
    return q + match.group("name") + q + match.group("sep") + quote + MASK + quote


def _option(match: re.Match[str]) -> str:
    quote, content = _quoted_value(match.group("value"))
    if not content or content in MASK_MARKERS or not secret_name(match.group("flag").lstrip("-")):
        return match.group(0)
    if content.lower() in AUTH_SCHEMES:
        return match.group(0)
    return match.group("flag") + match.group("sep") + quote + MASK + quote


def _glued_p(match: re.Match[str]) -> str:
    lead = match.group("lead") if match.group("lead") is not None else match.group("lead2")
    value = match.group("value") if match.group("value") is not None else match.group("value2")
    return match.group(0) if value in MASK_MARKERS else lead + MASK


# Cheap tests before the patterns: each one needs at least one of these.
NEEDLES = ("=", ":", "Bearer", "-")
# And each needs one of these: an = or : between a name and its value ("://" included), or a blank after a flag,
# "Bearer" or an auth scheme. A text without any (a long steps.csv: names, numbers, commas) is left as it is.
RULE_BYTES = (b"=", b":", b" ", b"\t")


def maskable(data: bytes) -> bool:
    """False when mask_text surely leaves this UTF-8 text unchanged (it holds none of RULE_BYTES): byte searches only."""
    return any(c in data for c in RULE_BYTES)


def mask_text(text: str) -> str:
    """Text with URL userinfo, auth headers, secret query values, options, pairs and assignments masked."""
    if not text or not any(n in text for n in NEEDLES):
        return text
    if "://" in text:
        text = _mask_userinfo(text)
    # Each pattern runs only where what it must match is in the text (looked for again after each
    # one, which may have changed it): a long table of numbers (steps.csv of a long run, `train-001,…`)
    # is not scanned by patterns that cannot match it.
    if ("=" in text or ":" in text) and AUTH_WORD.search(text):
        text = AUTH_HEADER.sub(_auth_header, text)
    if "Bearer" in text:
        text = BEARER.sub(_bearer, text)
    if "=" in text:
        text = QUERY_PARAM.sub(_query, text)
    if ("'" in text or '"' in text) and ("=" in text or ":" in text):
        text = QUOTED_PAIR.sub(_quoted_pair, text)
    if DASH_LETTER.search(text):  # every option starts with - or -- and a letter
        text = OPTION.sub(_option, text)
        if "mysql" in text or "mariadb" in text or "sshpass" in text:
            text = GLUED_P.sub(_glued_p, text)
    if "=" in text or ":" in text:
        text = ASSIGNMENT.sub(_assignment, text)
    return text


def mask_value(name: Optional[str], value: Any) -> Any:
    """A value as a record shows it: MASK for a secret-like name, else its text with the parts masked."""
    if value is None or value == "" or (isinstance(value, str) and value in MASK_MARKERS):
        return value
    if name is not None and secret_name(str(name)):
        return MASK
    return mask_text(value) if isinstance(value, str) else value


def secret_parts(text: str) -> List[str]:
    """The secret strings inside a text: URL passwords, credentials, secret query values, options, assignments."""
    # The password only: a user name alone (ssh://ubuntu@host) would be hunted into every path. Whatever it
    # spells: a password "NEGOTIATE" is a password, not the scheme word the last filter below is for.
    passwords = [p for _, _, p in userinfo_spans(text) if p and p not in MASK_MARKERS] if "://" in text else []
    found: List[str] = []
    for match in AUTH_HEADER.finditer(text):
        if match.group("scheme").lower() in AUTH_SCHEMES:
            found.append(match.group("creds"))
    found.extend(m.group("creds") for m in BEARER.finditer(text))
    for match in QUERY_PARAM.finditer(text):
        if secret_query_name(match.group("name")):
            found.append(match.group("value"))
    for match in QUOTED_PAIR.finditer(text):
        if secret_name(match.group("name")):
            found.append(_quoted_value(match.group("value"))[1])
    for match in OPTION.finditer(text):
        if secret_name(match.group("flag").lstrip("-")):
            found.append(_quoted_value(match.group("value"))[1])
    for match in GLUED_P.finditer(text):
        found.append(match.group("value") if match.group("value") is not None else match.group("value2"))
    for match in ASSIGNMENT.finditer(text):
        if secret_name(match.group(1)):
            found.append(match.group(3).strip("\"'"))
    # `Authorization: Bearer …` read as an assignment gives the scheme word: never a secret of its own
    return passwords + [f for f in found if f and f not in MASK_MARKERS and f.lower() not in AUTH_SCHEMES]
