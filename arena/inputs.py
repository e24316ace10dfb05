"""What every input shares: strict fields, validation, and what the schema says of them.

Input serializers check what they are given: types (a JSON string where an integer is
expected is refused: ``"3"`` is not 3), ranges, choices, lengths, unknown keys (a
misspelt field is an error, not a silent default), and the rules between fields, against
the stored object when an input changes one. Services validate their input with them,
so every caller (an API, the admin, a command) is refused alike, each bad field named.
Rules that need other state (quotas, what a state allows, whether a model may be called
now) stay in the services.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any

from django.core.validators import StepValueValidator
from django.db.models import Model
from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail
from rest_framework.settings import api_settings
from rest_framework.utils import html

from arena.exceptions import ValidationError
from arena.outbound import HTTP_URL, OutboundUrlValidator
from arena.patterns import NOT_BLANK, NOT_EMPTY, WHITESPACE, decimal_pattern, trimmed

MAX_ID = 2**63 - 1
MAX_INT = 2**31 - 1


# --- Strict fields --------------------------------------------------------------------------


class StrictIntegerField(serializers.IntegerField):
    """An integer given as a JSON number; strings, floats and booleans are refused.

    ``one_of``: the only values it takes; ``multiple_of``: what every value is a
    multiple of. The schema says both (``enum``, ``multipleOf``).
    """

    def __init__(
        self,
        *,
        one_of: tuple[int, ...] | None = None,
        multiple_of: int | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("min_value", -MAX_INT - 1)
        kwargs.setdefault("max_value", MAX_INT)
        super().__init__(**kwargs)
        self.one_of, self.multiple_of = one_of, multiple_of
        if multiple_of is not None:
            self.validators.append(StepValueValidator(multiple_of))

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        if self.one_of is not None and data not in self.one_of:
            raise serializers.ValidationError(f"Must be {_either(self.one_of)}.")
        return data


def _either(values: tuple[int, ...]) -> str:
    """Return ``values`` in words: ``1 or 3``, ``1, 2 or 3``."""
    *rest, last = (str(value) for value in values)
    return f"{', '.join(rest)} or {last}" if rest else last


class IdField(StrictIntegerField):
    """The id of a stored object."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(**kwargs)


class OwnedField(IdField):
    """The id of one of the owner's objects (the serializer's ``context["owner"]``); its
    value is the object itself."""

    default_error_messages = {
        "null": "Must be the id of one of your objects.",
        "missing": "No such object: {pk}.",
    }

    def __init__(self, model: type[Model], **kwargs: Any) -> None:
        self.model = model
        super().__init__(**kwargs)

    def run_validation(self, data: Any = serializers.empty) -> Model | None:
        pk = super().run_validation(data)
        if pk is None:
            return None
        obj = self.model.objects.filter(owner=self.context["owner"], pk=pk).first()
        if obj is None:
            self.fail("missing", pk=pk)
        return obj


class StrictFloatField(serializers.FloatField):
    """A number given as a JSON number; strings and booleans are refused."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """``true`` or ``false``; ``"yes"``, ``1`` and ``"true"`` are refused."""

    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictCharField(serializers.CharField):
    """A JSON string; numbers are refused rather than turned into text.

    Text is trimmed (unless ``trim_whitespace=False``); blank text is refused unless
    ``allow_blank``; a NUL character is refused, naming the field, as for every text of
    the API (PostgreSQL stores none); ``max_length`` counts the string as sent, before
    trimming. The schema says each (``StrictCharFieldScheme``). ``text_pattern``: a
    subclass's stricter rule, the pattern (``arena.patterns``, without anchors) that a
    value matches once trimmed; the subclass enforces it.
    """

    default_error_messages = {"invalid": "Must be a string."}
    text_pattern: str | None = None

    def run_validation(self, data: Any = serializers.empty) -> Any:
        if isinstance(data, str) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().run_validation(data)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)

    def schema_pattern(self) -> str:
        """Return the pattern the schema gives a value, but for the empty string, which
        the schema allows apart when the field allows blank (``minLength`` otherwise)."""
        if self.text_pattern is not None:
            return trimmed(self.text_pattern, blank=self.allow_blank)
        return NOT_BLANK if self.trim_whitespace and not self.allow_blank else NOT_EMPTY


class StrictDecimalField(serializers.DecimalField):
    """A decimal from ``min_value`` (at least 0) to ``max_value``, given as a JSON string
    written plainly: ``"2.5"``, ``"0.0004"``, ``"12"``. A JSON number (which parsers read
    as a binary float), ``""``, ``"1e3"``, ``"01"``, ``".5"`` and ``"1."`` are refused.

    The schema states the digits and the range as one pattern
    (``arena.patterns.decimal_pattern``); the field refuses what it does not match.
    """

    default_error_messages = {
        "invalid": 'Must be a decimal number in a string, written plainly: "2.5".'
    }

    def __init__(
        self,
        *,
        max_digits: int,
        decimal_places: int,
        min_value: Decimal,
        max_value: Decimal | None = None,
        **kwargs: Any,
    ) -> None:
        assert min_value >= 0, "a decimal input's pattern has no sign"
        super().__init__(
            max_digits=max_digits,
            decimal_places=decimal_places,
            min_value=min_value,
            max_value=max_value,
            **kwargs,
        )
        step = Decimal(1).scaleb(-decimal_places)
        highest = Decimal(10) ** (max_digits - decimal_places) - step
        self.written = re.compile(decimal_pattern(Decimal(0), highest, decimal_places))
        top = highest if max_value is None else min(highest, max_value)
        self.pattern = decimal_pattern(min_value, top, decimal_places)

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        # DRF reads a blank string as null where null is allowed (a form's empty input);
        # JSON says null for that, and "" is no decimal.
        return serializers.Field.validate_empty_values(self, data)

    def to_internal_value(self, data: Any) -> Decimal:
        if not isinstance(data, str):
            self.fail("invalid")
        if data.startswith("-") and self.written.fullmatch(data[1:]):
            self.fail("min_value", min_value=self.min_value)
        if not self.written.fullmatch(data):
            self.fail("invalid")
        return super().to_internal_value(data)


class UniqueListField(serializers.ListField):
    """A list whose items are each given once: a repeated one is refused at its index
    (the schema: ``uniqueItems``)."""

    def to_internal_value(self, data: Any) -> list[Any]:
        items = super().to_internal_value(data)
        repeated = {
            index: [f"{item} is listed twice."]
            for index, item in enumerate(items)
            if item in items[:index]
        }
        if repeated:
            raise serializers.ValidationError(repeated)
        return items


class UrlField(StrictCharField):
    """A URL the service may call (``arena.outbound``): the schema states its form,
    ``HTTP_URL``; a user name or password in it is refused, and so is a host whose
    address the outbound policy forbids (``instead``: where credentials go)."""

    text_pattern = HTTP_URL

    def __init__(self, *, instead: str = "", **kwargs: Any) -> None:
        super().__init__(validators=[OutboundUrlValidator(instead=instead)], **kwargs)


class StrictChoiceField(serializers.ChoiceField):
    """One of fixed strings; the message names the choices."""

    def __init__(self, choices: Iterable[Any], **kwargs: Any) -> None:
        super().__init__(choices, **kwargs)
        names = ", ".join(str(key) for key in self.choices)
        self.error_messages["invalid_choice"] = f"{{input!r}} is not one of: {names}."

    def get_value(self, dictionary: Any) -> Any:
        # DRF reads an empty query parameter (``?status=``) as no parameter; it is no
        # choice either, and is refused as one.
        if html.is_html_input(dictionary) and dictionary.get(self.field_name) == "":
            return ""
        return super().get_value(dictionary)

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid_choice", input=data)
        return super().to_internal_value(data)


class StrictSerializer(serializers.Serializer):
    """An input serializer that refuses keys it does not declare.

    Its schema says so (``additionalProperties: false``), and ``schema_rules`` adds the
    rules between fields that a create enforces (JSON Schema, as ``allOf`` entries), so
    the schema refuses what the API refuses; a partial update is checked against the
    stored object, so its schema has no such rules.
    """

    schema_rules: tuple[dict[str, Any], ...] = ()
    # The model whose defaults a create starts from (``state``).
    model: type[Model] | None = None

    def state(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Return every field as ``attrs`` leaves the object: over the stored object's
        values (``instance``, a change) or the model's defaults (a create), so that the
        rules between fields see the whole object."""
        if self.instance is not None:
            before = {name: getattr(self.instance, name) for name in self.fields}
        else:
            before = {name: self.model._meta.get_field(name).get_default() for name in self.fields}
        return {**before, **attrs}

    def to_internal_value(self, data: Any) -> Any:
        unknown = {}
        if isinstance(data, dict):
            unknown = {str(key): ["Unknown field."] for key in data if key not in self.fields}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if unknown and isinstance(exc.detail, dict):
                exc.detail.update(unknown)
            raise
        if unknown:
            raise serializers.ValidationError(unknown)
        return value


def holds_nul(value: Any) -> bool:
    """Say whether a JSON value holds a NUL character in a string or a key."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(holds_nul(key) or holds_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(holds_nul(item) for item in value)
    return False


def flatten_errors(errors: Any, prefix: str = "") -> dict[str, list[str]]:
    """Return DRF's nested errors as ``{"participants[0].ai_model": [messages]}``."""
    flat: dict[str, list[str]] = {}
    if isinstance(errors, dict):
        for key, value in errors.items():
            if isinstance(key, int):
                name = f"{prefix}[{key}]"
            elif key == api_settings.NON_FIELD_ERRORS_KEY and prefix:
                name = prefix
            else:
                name = f"{prefix}.{key}" if prefix else str(key)
            for field, messages in flatten_errors(value, name).items():
                flat.setdefault(field, []).extend(messages)
    elif isinstance(errors, list) and all(isinstance(item, str) for item in errors):
        flat[prefix or api_settings.NON_FIELD_ERRORS_KEY] = [str(item) for item in errors]
    elif isinstance(errors, list):
        for index, item in enumerate(errors):
            if item:
                flat.update(flatten_errors(item, f"{prefix}[{index}]"))
    else:
        flat[prefix or api_settings.NON_FIELD_ERRORS_KEY] = [str(errors)]
    return flat


def validate(
    serializer_class: type[serializers.Serializer],
    data: Any,
    *,
    partial: bool = False,
    instance: Any = None,
    context: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return the validated input, or raise ``ValidationError`` naming each bad field.

    ``instance``: the stored object that ``data`` changes (``partial``), which the rules
    between fields are checked against; ``context``: what the serializer looks up
    objects with (``owner``). An error whose code is a ``ValidationError`` subclass's
    raises that subclass (``not_enough_participants``).
    """
    serializer = serializer_class(instance, data=data, partial=partial, context=context or {})
    if serializer.is_valid():
        return dict(serializer.validated_data)
    codes = set(_codes(serializer.errors))
    refusal = next(
        (cls for cls in ValidationError.__subclasses__() if cls.code in codes), ValidationError
    )
    raise refusal(fields=flatten_errors(serializer.errors))


def _codes(errors: Any) -> Iterator[str]:
    """Yield the code of every error in DRF's nested errors."""
    if isinstance(errors, ErrorDetail):
        yield errors.code
    elif isinstance(errors, dict | list):
        for item in errors.values() if isinstance(errors, dict) else errors:
            yield from _codes(item)


def shown_fields(serializer_class: type[serializers.Serializer]) -> list[str]:
    """Return the names of the input fields that an answer shows back: all but the
    write-only ones (secrets)."""
    return [name for name, field in serializer_class().fields.items() if not field.write_only]


def refuse(errors: dict[str, list[str]], name: str, message: str) -> None:
    """Add ``message`` to the messages of field ``name`` in ``errors``."""
    errors.setdefault(name, []).append(message)


# --- What the schema says of inputs -----------------------------------------------------


class StrictIntegerFieldScheme(OpenApiSerializerFieldExtension):
    """Declare a ``StrictIntegerField``'s values (``one_of``) and step (``multiple_of``)."""

    target_class = StrictIntegerField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if self.target.one_of is not None:
            schema["enum"] = list(self.target.one_of)
        if self.target.multiple_of is not None:
            schema["multipleOf"] = self.target.multiple_of
        return schema


class UniqueListFieldScheme(OpenApiSerializerFieldExtension):
    """Declare that a ``UniqueListField`` takes each item once."""

    target_class = UniqueListField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        return {**schema, "uniqueItems": True}


class StrictDecimalFieldScheme(OpenApiSerializerFieldExtension):
    """Declare a ``StrictDecimalField``'s digits and range as its pattern."""

    target_class = StrictDecimalField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        schema["pattern"] = self.target.pattern
        return schema


class StrictSerializerScheme(OpenApiSerializerExtension):
    """Declare that a ``StrictSerializer`` refuses unknown keys, and its rules between
    fields."""

    target_class = StrictSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        schema["additionalProperties"] = False
        if schema.get("description") == inspect.getdoc(StrictSerializer):
            del schema["description"]  # what every input is, said of none in particular
        if self.target.schema_rules and not getattr(self.target, "partial", False):
            schema["allOf"] = list(self.target.schema_rules)
        return schema


class StrictCharFieldScheme(OpenApiSerializerFieldExtension):
    """Declare what a ``StrictCharField`` refuses: an empty string unless it allows
    blank, and by its pattern, NUL characters and (trimmed) blank text."""

    target_class = StrictCharField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if self.target.read_only:
            return schema
        if not self.target.allow_blank:
            schema["minLength"] = max(1, schema.get("minLength", 0))
        schema["pattern"] = self.target.schema_pattern()
        return schema


# What the description of a change (PATCH) says of the rules the schema cannot state.
CHANGE_RULES = (
    "The object is checked whole after the change: the rules between its fields (a "
    "create's, which the schema states) apply to its stored fields with the changes, so "
    "a change the schema allows on its own may be refused (400 naming the field)."
)

# Given and not empty: not null, not [], and as text something left once trimmed.
_EMPTY = {"not": {"enum": ["", None, []]}, "pattern": f"[^{WHITESPACE}]"}


def requires_when(
    field: str, values: list[Any], *required: str, default: Any = None
) -> dict[str, Any]:
    """Return a schema rule: when ``field`` is one of ``values`` (omitted, it is
    ``default``), the fields ``required`` are given and not empty."""
    cases: list[dict[str, Any]] = [
        {"required": [field], "properties": {field: {"not": {"enum": values}}}},
        {"required": list(required), "properties": dict.fromkeys(required, _EMPTY)},
    ]
    if default not in values:
        cases.append({"not": {"required": [field]}})
    return {"anyOf": cases}
