"""The provider table and the model catalogue, read once from ``catalogue.toml``.

Each provider has a display name, a wire format, its base URLs (a choice where it has
several: Qwen's regions, Kimi's two hosts) with a default, a default model, and the
capabilities of a model the catalogue does not list. Each listed model has its
capabilities (``capabilities.Capabilities``), prices, context window, output cap,
training cutoff and lifecycle status. Defaults are only defaults: every AI model
configuration can name its own model and base URL, and override the capabilities.

A file that breaks the catalogue's rules stops the process at import with a
``CatalogueError`` naming the entry at fault. No Django here.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, NamedTuple

from debates.providers.capabilities import Capabilities, CapabilityError
from debates.providers.pricing import Price, in_hours

WIRE_OPENAI = "openai"
WIRE_ANTHROPIC = "anthropic"
WIRE_SIMULATED = "simulated"
WIRES = (WIRE_OPENAI, WIRE_ANTHROPIC, WIRE_SIMULATED)

ACTIVE = "active"
DEPRECATED = "deprecated"
RETIRED = "retired"
STATUSES = (ACTIVE, DEPRECATED, RETIRED)
KEY_RULES = ("required", "optional", "none")

CATALOGUE_PATH = Path(__file__).with_name("catalogue.toml")


class CatalogueError(ValueError):
    """The catalogue file breaks a rule; the message names the entry."""


class ProviderInfo(NamedTuple):
    """One row of the provider table.

    ``json_schema``: a model of the provider the catalogue does not list can decode an
    answer under a JSON schema. ``base_urls`` maps each choice to its URL.
    """

    display_name: str
    default_base_url: str
    default_model: str
    wire: str
    json_schema: bool = False
    base_urls: Mapping[str, str] = {}
    key: str = "required"
    # The provider's peak hours, Monday to Friday, as (start, end) minutes of the UTC day:
    # outside them a model with an off-peak price costs that.
    peak_hours: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class ModelEntry:
    """One model of the catalogue, as its provider documents it."""

    provider: str
    name: str
    capabilities: Capabilities
    price: Price
    off_peak_price: Price | None = None
    status: str = ACTIVE
    shutdown: date | None = None
    replacement: str = ""
    context_window: int | None = None
    max_output: int | None = None
    training_cutoff: date | None = None
    aliases: tuple[str, ...] = field(default_factory=tuple)

    def status_on(self, today: date) -> str:
        """Return the status on ``today``: a deprecated model is retired from its shutdown."""
        if self.status == DEPRECATED and self.shutdown is not None and today >= self.shutdown:
            return RETIRED
        return self.status


@dataclass(frozen=True)
class Catalogue:
    """The providers and their models, with the defaults of unlisted models."""

    providers: dict[str, ProviderInfo]
    defaults: dict[str, Capabilities]
    models: dict[tuple[str, str], ModelEntry]

    def entry(self, provider: str, model: str) -> ModelEntry | None:
        """Return the entry of ``model`` (or of the model it is an alias of), else None."""
        return self.models.get((provider, model))

    def capabilities(self, provider: str, model: str) -> Capabilities:
        """Return the catalogue's capabilities of ``model``: its entry's, else its
        provider's defaults, else the plain defaults."""
        entry = self.entry(provider, model)
        if entry is not None:
            return entry.capabilities
        return self.defaults.get(provider, Capabilities())


def load(path: Path = CATALOGUE_PATH) -> Catalogue:
    """Return the catalogue in ``path``; raise ``CatalogueError`` on a broken entry."""
    with path.open("rb") as stream:
        data = tomllib.load(stream)
    providers: dict[str, ProviderInfo] = {}
    defaults: dict[str, Capabilities] = {}
    models: dict[tuple[str, str], ModelEntry] = {}
    for provider_id, raw in _table(data, "providers", "").items():
        where = f"providers.{provider_id}"
        base = _capabilities(Capabilities(), _table(raw, "defaults", where), f"{where}.defaults")
        defaults[provider_id] = base
        for name, model in _table(raw, "models", where).items():
            entry = _model(provider_id, name, model, base, f"{where}.models.{name}")
            for key in (name, *entry.aliases):
                models[(provider_id, key)] = entry
        providers[provider_id] = _provider(raw, base, where)
        if providers[provider_id].default_model and (
            (provider_id, providers[provider_id].default_model) not in models
        ):
            raise CatalogueError(f"{where}.default_model: not a model of the provider")
    return Catalogue(providers=providers, defaults=defaults, models=models)


def _table(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise CatalogueError(f"{where}.{key}: must be a table".lstrip("."))
    return value


def _provider(raw: Mapping[str, Any], base: Capabilities, where: str) -> ProviderInfo:
    base_urls = dict(_table(raw, "base_urls", where))
    choice = raw.get("default_base_url", "")
    if base_urls and choice not in base_urls:
        raise CatalogueError(f"{where}.default_base_url: must name one of base_urls")
    if raw.get("wire") not in WIRES:
        raise CatalogueError(f"{where}.wire: must be one of {', '.join(WIRES)}")
    if raw.get("key", "required") not in KEY_RULES:
        raise CatalogueError(f"{where}.key: must be one of {', '.join(KEY_RULES)}")
    if not isinstance(raw.get("name"), str) or not raw["name"]:
        raise CatalogueError(f"{where}.name: required")
    return ProviderInfo(
        display_name=raw["name"],
        default_base_url=base_urls.get(choice, ""),
        default_model=str(raw.get("default_model", "")),
        wire=raw["wire"],
        json_schema=base.json_schema,
        base_urls=base_urls,
        key=raw.get("key", "required"),
        peak_hours=_peak_hours(raw.get("peak_hours_utc", []), f"{where}.peak_hours_utc"),
    )


def _peak_hours(raw: object, where: str) -> tuple[tuple[int, int], ...]:
    """Parse ``["01:00-04:00", ...]`` into (start, end) minutes of the day."""
    if not isinstance(raw, list):
        raise CatalogueError(f'{where}: a list of "HH:MM-HH:MM"')
    spans = []
    for span in raw:
        try:
            start, end = (int(h) * 60 + int(m) for h, m in (t.split(":") for t in span.split("-")))
        except (AttributeError, ValueError):
            raise CatalogueError(f'{where}: {span!r} is not "HH:MM-HH:MM"') from None
        if not 0 <= start < end <= 24 * 60:
            raise CatalogueError(f"{where}: {span!r} must run forwards within a day")
        spans.append((start, end))
    return tuple(spans)


def _capabilities(base: Capabilities, raw: Mapping[str, Any], where: str) -> Capabilities:
    try:
        return base.merged(raw)
    except CapabilityError as error:
        raise CatalogueError(f"{where}.{error}") from None


_ENTRY_KEYS = frozenset(
    {
        "price",
        "off_peak_price",
        "status",
        "shutdown",
        "replacement",
        "context_window",
        "training_cutoff",
        "aliases",
    }
)


def _model(
    provider: str, name: str, raw: Mapping[str, Any], base: Capabilities, where: str
) -> ModelEntry:
    wanted = {key: value for key, value in raw.items() if key not in _ENTRY_KEYS}
    capabilities = _capabilities(base, wanted, where)
    status = raw.get("status")
    if status not in STATUSES:
        raise CatalogueError(f"{where}.status: must be one of {', '.join(STATUSES)}")
    shutdown = raw.get("shutdown")
    if status != ACTIVE and not isinstance(shutdown, date):
        raise CatalogueError(f"{where}.shutdown: a {status} model needs its shutdown date")
    cutoff = raw.get("training_cutoff")
    if cutoff is not None and not isinstance(cutoff, date):
        raise CatalogueError(f"{where}.training_cutoff: must be a date")
    return ModelEntry(
        provider=provider,
        name=name,
        capabilities=capabilities,
        price=_price(raw.get("price"), f"{where}.price"),
        off_peak_price=(
            _price(raw["off_peak_price"], f"{where}.off_peak_price")
            if "off_peak_price" in raw
            else None
        ),
        status=status,
        shutdown=shutdown,
        replacement=str(raw.get("replacement", "")),
        context_window=raw.get("context_window"),
        max_output=capabilities.max_output,
        training_cutoff=cutoff,
        aliases=tuple(raw.get("aliases", ())),
    )


def _price(raw: object, where: str) -> Price:
    if not isinstance(raw, Mapping):
        raise CatalogueError(f"{where}: required {{input, cached_input, output}}")
    try:
        figures = {key: Decimal(str(value)) for key, value in raw.items()}
        return Price(
            figures.pop("input"),
            figures.pop("cached_input"),
            figures.pop("output"),
            figures.pop("cache_write", None),
        )
    except (KeyError, InvalidOperation) as error:
        raise CatalogueError(f"{where}: needs input, cached_input, output as numbers") from error


CATALOGUE = load()
PROVIDERS: dict[str, ProviderInfo] = CATALOGUE.providers


def default_model(provider: str) -> str:
    """Return the provider's default model name, "" for an unknown provider."""
    info = PROVIDERS.get(provider)
    return info.default_model if info else ""


def model_entry(provider: str, model_name: str) -> ModelEntry | None:
    """Return the catalogue entry of a model (its provider's default model when
    ``model_name`` is empty), None when the catalogue does not list it."""
    return CATALOGUE.entry(provider, model_name or default_model(provider))


def capabilities_for(provider: str, model_name: str) -> Capabilities:
    """Return the catalogue's capabilities of a model (empty name: the default model)."""
    return CATALOGUE.capabilities(provider, model_name or default_model(provider))


def default_training_cutoff(provider: str, model_name: str) -> date | None:
    """Return the catalogue's training cutoff of a model (its provider's default model
    when ``model_name`` is empty), None when unknown or simulated."""
    if provider == WIRE_SIMULATED:
        return None
    entry = model_entry(provider, model_name)
    return entry.training_cutoff if entry else None


def catalogue_price(provider: str, model_name: str, at: datetime | None = None) -> Price | None:
    """Return the catalogue's list price of a model for a call at ``at`` (the off-peak
    price outside its provider's peak hours, where it has one), None when the catalogue
    does not list it."""
    entry = CATALOGUE.entry(provider, model_name)
    if entry is None:
        return None
    peak = PROVIDERS[provider].peak_hours
    if entry.off_peak_price is not None and at is not None and not in_hours(at, peak):
        return entry.off_peak_price
    return entry.price


@dataclass(frozen=True)
class Lifecycle:
    """Where a model stands on a day: its status, shutdown date, replacement, and the
    warning to show ("" for an active model or one the catalogue does not list)."""

    status: str
    shutdown: date | None = None
    replacement: str = ""
    warning: str = ""


def lifecycle(provider: str, model_name: str, today: date) -> Lifecycle:
    """Return the lifecycle of a model (empty name: the provider's default) on ``today``;
    a model the catalogue does not list counts as active."""
    entry = model_entry(provider, model_name)
    if entry is None:
        return Lifecycle(status=ACTIVE)
    status = entry.status_on(today)
    if status == ACTIVE:
        return Lifecycle(status=ACTIVE)
    instead = f"; use {entry.replacement} instead" if entry.replacement else ""
    when = "was retired" if status == RETIRED else "is deprecated and shuts down"
    warning = f"{entry.name} {when} on {entry.shutdown}{instead}."
    return Lifecycle(status, entry.shutdown, entry.replacement, warning)
