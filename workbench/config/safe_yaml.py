"""YAML as the config reads it: UTF-8 only, bounded in size, no anchors or aliases, no duplicate keys."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError

# A config is a few hundred bytes; a megabyte is far beyond any real one and keeps parsing instant.
MAX_CONFIG_BYTES = 1 << 20


class YamlError(ValueError):
    """A config text that cannot be read: not UTF-8, too big, not YAML, an alias, a duplicate key."""


class _Loader(yaml.SafeLoader):
    """SafeLoader for configs: 1e-3 is a float (YAML 1.2); anchors, aliases and duplicate keys are errors.

    Aliases are refused because a few lines of nested aliases (an "alias bomb") expand into gigabytes
    once anything walks the value; a config never needs them.
    """

    def compose_node(self, parent: Any, index: Any) -> Any:
        """Refuse an alias or an anchor before anything is built from it."""
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise ComposerError(
                None,
                None,
                "alias *%s: anchors and aliases are not allowed in a config (write the value out)" % event.anchor,
                # types-PyYAML types an event's mark as either Mark class (pure or libyaml); MarkedYAMLError
                # takes only the pure one in its stubs, though it only formats the mark it is given.
                event.start_mark,  # type: ignore[arg-type]
            )
        if getattr(event, "anchor", None) is not None:
            raise ComposerError(
                None,
                None,
                "anchor &%s: anchors and aliases are not allowed in a config (write the value out)" % event.anchor,
                event.start_mark,
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        """A mapping in which every key appears once (YAML would silently keep the last one)."""
        if isinstance(node, yaml.MappingNode):
            lines: Dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in lines:
                        raise ConstructorError(
                            None,
                            None,
                            "duplicate key %r at lines %d and %d" % (key, lines[key], line),
                            key_node.start_mark,
                        )
                    lines[key] = line
                except TypeError:
                    continue  # an unhashable key: the base class says so
        return super().construct_mapping(node, deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789")
)


def parse(text: str) -> Any:
    """Parse YAML text with the config's rules; YamlError says what is wrong and where."""
    if len(text) > MAX_CONFIG_BYTES:
        raise YamlError("%d characters, more than a config may hold (%d)" % (len(text), MAX_CONFIG_BYTES))
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise YamlError("not valid YAML: %s" % exc)
    except RecursionError:
        raise YamlError("not valid YAML: nested too deeply")


def read(path: Path) -> Any:
    """Read and parse a config file; OSError when it cannot be read, YamlError when its content is wrong."""
    with open(str(path), "rb") as fh:
        data = fh.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise YamlError("more than %d bytes, more than a config may hold" % MAX_CONFIG_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlError(
            "not UTF-8 text (byte 0x%02x at offset %d); save the file as UTF-8" % (data[exc.start], exc.start)
        )
    return parse(text)
