"""A small vocabulary of field types for checking event lines: numbers, strings, objects, lists."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

NON_FINITE = ("nan", "inf", "-inf")  # how the encoder writes non-finite floats


def describe(value: Any) -> str:
    """A short name of a JSON value's type, with the value when it is small."""
    name = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a bool",
        int: "an int",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)
    text = repr(value)
    return name if len(text) > 40 else "%s %s" % (name, text)


class FieldType:
    """One expected type: a fast isinstance path, an optional slower acceptance rule, and nested checks."""

    def __init__(
        self,
        name: str,
        types: Tuple[type, ...],
        accept: Optional[Callable[[Any], bool]] = None,
        inner: Optional[Callable[[Any], Optional[str]]] = None,
        optional: bool = False,
        required: bool = False,
    ):
        self.name = name
        self.types = types
        self.accept = accept
        self.inner = inner
        self.optional = optional
        self.required = required  # as a field of an event type: every line of the type has it

    def problem(self, value: Any) -> Optional[str]:
        """None when `value` fits, else what is wrong with it."""
        if type(value) in self.types:  # exact types: a bool is not an int here
            return self.inner(value) if self.inner is not None else None
        if value is None and self.optional:
            return None
        if self.accept is not None and self.accept(value):
            return None
        return "%s expected, got %s" % (self.name, describe(value))

    def __or__(self, other: FieldType) -> FieldType:
        """Either type (checked in order)."""

        def accept(value: Any) -> bool:
            return other.problem(value) is None or (self.accept is not None and self.accept(value))

        return FieldType("%s or %s" % (self.name, other.name), self.types, accept, self.inner, self.optional)


def opt(ft: FieldType) -> FieldType:
    """The same type, or null."""
    return FieldType(ft.name + " or null", ft.types, ft.accept, ft.inner, True)


def need(ft: FieldType) -> FieldType:
    """The same type, for a field every line of its event type must have (it may still be null where `opt`)."""
    return FieldType(ft.name, ft.types, ft.accept, ft.inner, ft.optional, required=True)


NUM = FieldType("a number", (int, float), accept=lambda v: isinstance(v, str) and v in NON_FINITE)
INT = FieldType("an int", (int,))
STR = FieldType("a string", (str,))
BOOL = FieldType("a bool", (bool,))
DICT = FieldType("an object", (dict,))
LIST = FieldType("a list", (list,))


def one_of(*values: str) -> FieldType:
    """A string from a fixed vocabulary."""
    allowed = frozenset(values)
    return FieldType("one of %s" % ", ".join(values), (), accept=lambda v: isinstance(v, str) and v in allowed)


def obj(**fields: FieldType) -> FieldType:
    """An object whose named fields (when present) have the given types; other keys are free."""
    return FieldType("an object", (dict,), inner=lambda value: fields_problem(value, fields))


def list_of(item: FieldType) -> FieldType:
    """A list whose every item has the given type."""

    def inner(value: list) -> Optional[str]:
        for i, x in enumerate(value):
            p = item.problem(x)
            if p is not None:
                return "[%d]: %s" % (i, p)
        return None

    return FieldType("a list of %s" % item.name.replace("an ", "").replace("a ", ""), (list,), inner=inner)


def fields_problem(value: Dict[str, Any], fields: Dict[str, FieldType]) -> Optional[str]:
    """The first field of `value` whose type is wrong, as 'name: problem'."""
    for name, ft in fields.items():
        if name in value:
            p = ft.problem(value[name])
            if p is not None:
                return "%s: %s" % (name, p)
    return None
