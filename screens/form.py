"""Labelled form fields and the form check that uses the CLI's own config rules."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from textual.containers import Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Label, Select
from textual.widgets.select import InvalidSelectValueError

from workbench.config.layers import ConfigError, check_value, schema_field


class LabelledField(Vertical):
    """A label above its field, so a value is never shown without saying what it is."""

    DEFAULT_CSS = """
    LabelledField { width: auto; height: 3; }
    LabelledField > Label { height: 1; color: $text-muted; padding: 0 1; }
    LabelledField > Input, LabelledField > Select { height: 1; }
    """

    def __init__(self, label: str, field: Widget, key: str = "", **kw: Any) -> None:
        super().__init__(**kw)
        self.label_text = label
        self.field = field
        self.key = key  # the dotted config key the field sets, e.g. train.epochs

    def compose(self):
        yield Label(self.label_text)
        yield self.field


class NumberInput(Input):
    """An Input for a numeric config key: what cannot become a number is refused as it is typed, saying why."""

    class Refused(Message):
        """Text typed into a number field was not taken."""

        def __init__(self, field: NumberInput, text: str, reason: str) -> None:
            super().__init__()
            self.field, self.text, self.reason = field, text, reason

    def __init__(self, value: str, key: str, **kw: Any) -> None:
        spec = schema_field(key)
        whole = int in spec.types and float not in spec.types
        super().__init__(value, type="integer" if whole else "number", **kw)
        self.key = key
        self.expects = "%s, %s" % ("a whole number" if whole else "a number", spec.expected())
        self._typed = ""

    def replace(self, text: str, start: int, end: int) -> None:
        self._typed = text  # restricted() is told nothing: remember what was refused
        super().replace(text, start, end)

    def restricted(self) -> None:
        self.post_message(
            self.Refused(self, self._typed, "%r not typed: %s takes %s" % (self._typed, self.key, self.expects))
        )


def field_value(widget: Widget, key: str) -> Any:
    """The typed value of a field: the schema's type when the text parses, else the raw text (checked next)."""
    if isinstance(widget, Select):
        return None if widget.value is Select.BLANK else widget.value
    if not isinstance(widget, Input):
        raise TypeError("%r is not a form field (an Input or a Select)" % widget)
    text = widget.value.strip()
    types = schema_field(key).types
    for cast in (int, float):
        if cast in types:
            try:
                return cast(text)
            except ValueError:
                continue
    return text


def check_fields(fields: List[Tuple[str, str, Any]]) -> List[str]:
    """Each (label, dotted key, value) checked by the config schema; one line per problem, naming the field."""
    problems = []
    for label, key, value in fields:
        try:
            check_value(key, value, "form")
        except ConfigError as exc:
            why = str(exc).split("; ", 1)[-1]
            problems.append("%s (%s) = %r: %s" % (label, key, value if value != "" else "", why))
    return problems


def show_value(widget: Widget, value: Any) -> None:
    """Put a config value into a field (a Select only takes one of its options)."""
    if isinstance(widget, Input):
        widget.value = "" if value is None else str(value)
    elif isinstance(widget, Select):
        try:
            widget.value = value
        except InvalidSelectValueError:  # a value the form does not offer leaves the field as it was
            pass


def initial_weights(key: str) -> Optional[str]:
    """How a source key names untrained initial weights: `init` where the config accepts it, else unset (None)."""
    return "init" if not check_fields([("source", key, "init")]) else None
