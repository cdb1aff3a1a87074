"""Keeps secrets out of the session record: an environment allow-list, and the one masking rule applied to
every JSON value and text, plus every secret value found once hunted down wherever else it appears."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from typing import Any, Dict, Iterable, Mapping, Optional, Set, Tuple

from workbench.masking.envvars import allowed_name
from workbench.masking.rule import MASK, MASK_MARKERS, mask_text, maskable, secret_name, secret_parts

# Parent keys under which a mapping of NAME -> value is taken to be environment variables.
ENV_KEYS = frozenset(("env", "environ", "environment", "env_vars", "environment_variables", "variables"))
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Za-z0-9]*)*$")
MIN_SECRET_CHARS = 6  # shorter values ("1", "yes", "8080") are too common to hunt for by value
NUMBER = re.compile(r"^[-+0-9.eE:]+$")
# The quick look at a JSON line (Scrubber.plain_line): its strings without escapes, and what may sit between them.
OUTSIDE_CHARS = frozenset(" \t\r{}[],:0123456789eE+-.truefalsn")
OUTSIDE_BYTES = "".join(sorted(OUTSIDE_CHARS)).encode("ascii")
TOKEN_CACHE_MAX = 100000


def huntable(value: str) -> bool:
    """True for a value worth removing wherever it appears: long enough, not a number, not a path."""
    return (
        len(value) >= MIN_SECRET_CHARS
        and value not in MASK_MARKERS
        and not NUMBER.match(value)
        and not value.startswith(("/", "~", "./", "../"))
    )


def looks_like_env(key: Optional[str], value: Any) -> bool:
    """True for a mapping of environment variables (under an env-like key, names like PATH or GLOG_v)."""
    if not isinstance(value, dict) or not value:
        return False
    if not all(isinstance(v, (str, type(None))) for v in value.values()):
        return False
    names_ok = all(ENV_NAME.match(str(k)) for k in value)
    if key is not None and str(key).lower() in ENV_KEYS:
        return names_ok
    return names_ok and len(value) >= 2 and any(allowed_name(str(k)) for k in value)


def env_secret_values(environ: Optional[Mapping[str, str]] = None) -> Set[str]:
    """Secrets of an environment (default: this process's): values of secret-like names, URL passwords, tokens."""
    environ = os.environ if environ is None else environ
    found: Set[str] = set()
    for name, value in environ.items():
        if not isinstance(value, str):
            continue
        found.update(v for v in ([value] if secret_name(name) else secret_parts(value)) if huntable(v))
    return found


class Scrubber:
    """Masks secrets in JSON values and text, remembering every masked value to remove it elsewhere."""

    def __init__(self, known_values: Iterable[str] = ()):
        self.values: Set[str] = {v for v in known_values if huntable(v)}
        self._plain: Dict[bytes, bool] = {}  # string token -> holds nothing to learn or mask (for self.values)
        self._plain_for = -1  # len(self.values) the cache was made for

    def plain_line(self, line: bytes) -> bool:
        """True when a JSON line surely holds nothing to learn or mask, decided without decoding it.

        Event files are mostly step lines whose strings are a handful of names ("type", "steady");
        each distinct string is judged once (no secret-like name, nothing masked in it, no secret
        part), and the rest of the line may only be JSON punctuation, numbers, true/false/null.
        Anything else (an escape, a letter outside a string) takes the full path.
        """
        return self._plain_text(line, OUTSIDE_BYTES)

    def plain_block(self, block: bytes) -> bool:
        """True when every line of a block of JSON lines is plain (plain_line), decided for the block at once.

        A string holding a newline would put the block's idea of "inside a string" out of step with
        the lines' (a line with an odd number of quotes), so such a string sends the block to the
        line-by-line check; otherwise each line's strings and the bytes between them are the block's.
        """
        return self._plain_text(block, OUTSIDE_BYTES + b"\n")

    def _plain_text(self, data: bytes, outside: bytes) -> bool:
        if b"\\" in data:
            return False
        if self._plain_for != len(self.values):
            self._plain = {}
            self._plain_for = len(self.values)
            # a remembered value made only of characters that may sit outside strings could hide there
            self._plain_ok = not any(set(v) <= OUTSIDE_CHARS for v in self.values)
        if not self._plain_ok:
            return False
        parts = data.split(b'"')  # without escapes, every odd part is a string's content
        if len(parts) % 2 == 0:
            return False
        # The bytes outside strings are all `outside` when every byte that is not lies in a string: as many such
        # bytes in the whole as in the strings (counted per distinct string, without joining the rest).
        strings = Counter(parts[1::2])
        drop = outside + b'"'
        if len(data.translate(None, drop)) != sum(len(t.translate(None, drop)) * n for t, n in strings.items()):
            return False
        cache = self._plain
        for token in strings:
            known = cache.get(token)
            if known is None:
                if b"\n" in token:
                    return False
                if len(cache) >= TOKEN_CACHE_MAX:
                    cache.clear()
                text = token.decode("utf-8", "replace")
                known = not secret_name(text) and not secret_parts(text) and self.text(text) == text
                cache[token] = known
            if not known:
                return False
        return True

    # -- finding ---------------------------------------------------------------------------------
    def learn_obj(self, obj: Any, key: Optional[str] = None) -> None:
        """Remember the values of secret-like names and the secrets inside strings of a JSON value."""
        if isinstance(obj, dict):
            for k, v in obj.items():
                if isinstance(v, str) and secret_name(str(k)):
                    self._remember(v)
                self.learn_obj(v, str(k))
        elif isinstance(obj, list):
            for v in obj:
                self.learn_obj(v, key)
        elif isinstance(obj, str):
            self.learn_text(obj)

    def learn_text(self, text: str) -> None:
        """Remember the secrets in free text: secret-named assignments, URL passwords, secret query values."""
        for value in secret_parts(text):
            self._remember(value)

    def _remember(self, value: str) -> None:
        if huntable(value):
            self.values.add(value)

    # -- masking ---------------------------------------------------------------------------------
    def text(self, text: str) -> str:
        """Text masked by the one rule, and every remembered value removed."""
        text = mask_text(text)
        for value in sorted(self.values, key=len, reverse=True):
            if value in text:
                text = text.replace(value, MASK)
        return text

    def obj(self, obj: Any, key: Optional[str] = None) -> Any:
        """A copy of a JSON value with secret-like fields, URL credentials and remembered values masked."""
        return self._walk(obj, key, cut_env=False)

    def report_obj(self, obj: Any, key: Optional[str] = None) -> Any:
        """Like obj(), and environment mappings are cut to the allow-list (what the report shows)."""
        return self._walk(obj, key, cut_env=True)

    def _walk(self, obj: Any, key: Optional[str], cut_env: bool) -> Any:
        """The one walker: a field with a secret-like name is masked whole, every other string by text()."""
        if cut_env and looks_like_env(key, obj):
            obj = {k: obj[k] for k in sorted(obj) if allowed_name(str(k))}
        if isinstance(obj, dict):
            out = {}
            for k, v in obj.items():
                if isinstance(v, str) and secret_name(str(k)) and v and v not in MASK_MARKERS:
                    out[k] = MASK
                else:
                    out[k] = self._walk(v, str(k), cut_env)
            return out
        if isinstance(obj, list):
            return [self._walk(v, key, cut_env) for v in obj]
        if isinstance(obj, str):
            return self.text(obj)
        return obj

    # -- files -----------------------------------------------------------------------------------
    def learn_file(self, name: str, data: bytes) -> bool:
        """Remember the secrets a file holds (JSON, JSON lines or text; binary files are skipped).

        True when the bytes are JSON lines found plain (plain_block): nothing learned, and file() would
        return them unchanged as long as no other value is learned meanwhile.
        """
        kind = file_kind(name, data)
        if kind == "json":
            try:
                self.learn_obj(json.loads(data.decode("utf-8")))
                return False
            except ValueError:
                kind = "text"
        if kind == "jsonl":
            if self.plain_block(data):
                return True
            for raw in data.split(b"\n"):
                if self.plain_line(raw):
                    continue
                for line in raw.decode("utf-8", "replace").splitlines():
                    try:
                        self.learn_obj(json.loads(line))
                    except ValueError:
                        self.learn_text(line)
            return False
        if kind == "text":
            self.learn_text(data.decode("utf-8", "replace"))
        return False

    def file(self, name: str, data: bytes) -> bytes:
        """The file's bytes with secrets masked; unchanged bytes (and lines) are kept exactly."""
        kind = file_kind(name, data)
        if kind == "binary":
            return data
        if kind == "json":
            try:
                obj = json.loads(data.decode("utf-8"))
            except ValueError:
                kind = "text"
            else:
                clean = self.obj(obj)
                if clean == obj:
                    return data
                return (json.dumps(clean, indent=2) + "\n").encode("utf-8")
        if kind == "jsonl":
            if self.plain_block(data):
                return data
            lines = data.split(b"\n")
            out = [self._jsonl_line(line) for line in lines]
            return b"\n".join(out)
        if not maskable(data) and self._none_in(data):
            return data  # what text() would return, found by byte searches (a long steps.csv, block by block)
        text = data.decode("utf-8", "replace")
        clean = self.text(text)
        return data if clean == text else clean.encode("utf-8")

    def _none_in(self, data: bytes) -> bool:
        """True when no remembered value is in these bytes' text (one holding U+FFFD, which a bad byte decodes to,
        is looked for in the text only)."""
        return all("\ufffd" not in v and v.encode("utf-8") not in data for v in self.values)

    def _jsonl_line(self, line: bytes) -> bytes:
        if not line.strip() or self.plain_line(line):
            return line
        text = line.decode("utf-8", "replace")
        try:
            obj = json.loads(text)
        except ValueError:
            clean_text = self.text(text)
            return line if clean_text == text else clean_text.encode("utf-8")
        clean = self.obj(obj)
        if clean == obj:
            return line
        return json.dumps(clean, separators=(",", ":")).encode("utf-8")


TEXT_SUFFIXES = (".log", ".yaml", ".yml", ".txt", ".md", ".csv", ".svg", ".html", ".sh", ".cfg", ".info", ".py")


def file_kind(name: str, data: bytes) -> str:
    """'json', 'jsonl', 'text' or 'binary', from the name and a look at the bytes."""
    lower = name.lower()
    if lower.endswith(".jsonl"):
        return "jsonl"
    if lower.endswith(".json"):
        return "json"
    if lower.endswith(TEXT_SUFFIXES):
        return "text"
    head = data[:8192]
    if b"\0" in head:
        return "binary"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # a character cut at the end of the sample is fine
            return "binary"
    return "text"


def scrub_pairs(pairs: Iterable[Tuple[str, bytes]], environ: Optional[Mapping[str, str]] = None) -> Scrubber:
    """A Scrubber that has learned the secrets of these (name, bytes) files and of the environment."""
    scrubber = Scrubber(env_secret_values(environ))
    for name, data in pairs:
        scrubber.learn_file(name, data)
    return scrubber
