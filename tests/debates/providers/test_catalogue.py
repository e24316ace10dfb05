"""The model catalogue: current defaults, the providers' hosts, lifecycle, validation."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from debates.providers.capabilities import Capabilities, CapabilityError
from debates.providers.catalog import (
    CATALOGUE,
    PROVIDERS,
    CatalogueError,
    capabilities_for,
    catalogue_price,
    default_training_cutoff,
    load,
    model_entry,
)
from debates.providers.pricing import Price


@pytest.mark.parametrize("provider", [p for p, info in PROVIDERS.items() if info.default_model])
def test_every_default_model_is_listed_and_active_today(provider: str) -> None:
    # given the provider's default model
    entry = model_entry(provider, "")

    # when / then: a default past or near its shutdown would fail a user's first run
    assert entry is not None
    assert entry.status_on(date.today()) == "active"


def test_qwen_defaults_to_the_international_host_and_offers_each_region() -> None:
    info = PROVIDERS["qwen"]
    assert info.default_base_url == "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
    assert info.base_urls["beijing"] == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    assert info.base_urls["virginia"] == "https://dashscope-us.aliyuncs.com/compatible-mode/v1"


def test_kimi_offers_its_two_hosts() -> None:
    assert dict(PROVIDERS["kimi"].base_urls) == {
        "global": "https://api.moonshot.ai/v1",
        "china": "https://api.moonshot.cn/v1",
    }


@pytest.mark.parametrize(
    ("provider", "model", "status"),
    [
        ("kimi", "kimi-k2-0905-preview", "retired"),
        ("gemini", "gemini-2.5-flash", "retired"),
        ("grok", "grok-4", "retired"),
        ("grok", "grok-4-0709", "retired"),
        ("openai", "gpt-5-mini", "deprecated"),
    ],
)
def test_the_models_the_issue_names_as_broken_are_deprecated_or_retired(
    provider: str, model: str, status: str
) -> None:
    entry = model_entry(provider, model)
    assert entry is not None
    assert entry.status_on(date(2026, 12, 7)) == status


def test_a_deprecated_model_is_retired_from_its_shutdown_date() -> None:
    entry = model_entry("openai", "gpt-5-mini")
    assert entry is not None
    assert entry.shutdown == date(2026, 12, 11)
    assert entry.status_on(date(2026, 12, 10)) == "deprecated"
    assert entry.status_on(date(2026, 12, 11)) == "retired"


def test_kimi_k2_6_fixes_its_temperature_and_reports_cached_tokens_at_the_top() -> None:
    caps = capabilities_for("kimi", "kimi-k2.6")
    assert (caps.temperature, caps.fixed_temperature) == ("fixed", 1.0)
    assert not caps.sends_temperature()
    assert caps.cached_usage == "cached_tokens"


def test_xai_reports_reasoning_tokens_apart_from_completion_tokens() -> None:
    caps = capabilities_for("grok", "")
    assert caps.reasoning_usage == "completion_tokens_details.reasoning_tokens"
    assert caps.reasoning_in_completion is False


@pytest.mark.parametrize(
    ("provider", "model", "effort"),
    [
        ("openai", "gpt-6.1-terra", "low"),
        ("deepseek", "deepseek-flash", "low"),
        ("gemini", "gemini-3.5-flash", "low"),
        ("kimi", "kimi-k2.6", "none"),
        ("qwen", "qwen-plus", "none"),
        ("openai", "gpt-4.1", ""),
    ],
)
def test_a_vote_asks_low_effort_or_thinking_off_where_the_model_has_no_low(
    provider: str, model: str, effort: str
) -> None:
    caps = capabilities_for(provider, model)
    assert caps.effort_for("vote") == effort
    assert caps.effort_for("judge_scores") == effort
    assert caps.effort_for("turn") == ""


def test_an_unlisted_model_takes_its_providers_defaults() -> None:
    assert capabilities_for("openai", "o9-unknown") == CATALOGUE.defaults["openai"]
    assert capabilities_for("openai", "o9-unknown").temperature == "absent"
    assert model_entry("openai", "o9-unknown") is None


def test_list_prices_and_training_cutoffs_come_from_the_catalogue() -> None:
    assert catalogue_price("openai", "gpt-6.1-terra") == Price(
        Decimal("1.00"), Decimal("0.05"), Decimal("5.00"), Decimal("1.25")
    )
    assert catalogue_price("openai", "nope") is None
    assert default_training_cutoff("openai", "") == date(2026, 6, 1)
    assert default_training_cutoff("simulated", "") is None


def test_an_override_lays_over_the_catalogue_and_refuses_an_unknown_key() -> None:
    caps = capabilities_for("openai", "gpt-6.1-terra").merged(
        {"temperature": "free", "brief_effort": "medium"}
    )
    assert caps.sends_temperature()
    assert caps.effort_for("vote") == "medium"
    with pytest.raises(CapabilityError) as raised:
        Capabilities().merged({"reasoning": {"param": "effort_of_mind", "efforts": ["low"]}})
    assert raised.value.key == "reasoning.param"


@pytest.mark.parametrize(
    ("answer_cap", "kind", "cap"),
    [
        (2000, "turn", 2000 + 8192),
        (2000, "vote", 2000 + 1024),
        (60_000, "turn", 65_536),
        (70_000, "turn", 70_000),
    ],
)
def test_the_output_cap_adds_the_efforts_reasoning_budget_within_the_models_maximum(
    answer_cap: int, kind: str, cap: int
) -> None:
    # given gemini-3.5-flash: medium by default, low in votes, 65,536 output tokens at most
    caps = capabilities_for("gemini", "gemini-3.5-flash")
    # when / then: never above the maximum, and never below the answer's own cap
    assert caps.output_cap(answer_cap, kind) == cap


def test_an_effort_without_a_budget_takes_the_largest_and_off_or_none_takes_nothing() -> None:
    caps = Capabilities().merged(
        {
            "reasoning": {"param": "reasoning_effort", "efforts": ["none", "low", "high"]},
            "reasoning_budget": {"low": 100, "medium": 300},
            "turn_effort": "high",
            "brief_effort": "none",
        }
    )
    assert (caps.output_cap(10, "turn"), caps.output_cap(10, "vote")) == (310, 10)
    assert caps.merged({"reasoning_budget": {}}).output_cap(10, "turn") == 10


@pytest.mark.parametrize(
    "entry", [e for e in CATALOGUE.models.values() if e.capabilities.reasoning_budget]
)
def test_every_effort_of_a_model_with_reasoning_budgets_has_its_own(entry) -> None:
    caps = entry.capabilities
    assert set(caps.efforts) - {"none"} <= set(dict(caps.reasoning_budget)), entry.name


@pytest.mark.parametrize(
    ("model_toml", "named"),
    [
        ('temperature = "hot"\nstatus = "active"', "providers.p.models.m.temperature"),
        (
            'reasoning_budget = { low = -1 }\nstatus = "active"',
            "providers.p.models.m.reasoning_budget.low",
        ),
        ('status = "retired"', "providers.p.models.m.shutdown"),
        ('status = "gone"', "providers.p.models.m.status"),
        ('status = "active"\nvibes = 1', "providers.p.models.m.vibes"),
    ],
)
def test_a_broken_catalogue_is_refused_naming_the_entry(
    tmp_path: Path, model_toml: str, named: str
) -> None:
    # given a catalogue with one broken model entry
    path = tmp_path / "catalogue.toml"
    path.write_text(
        '[providers.p]\nname = "P"\nwire = "openai"\ndefault_model = "m"\n'
        "[providers.p.models.m]\n"
        'price = { input = "1", cached_input = "0.1", output = "2" }\n' + model_toml + "\n"
    )

    # when / then
    with pytest.raises(CatalogueError, match=named.replace(".", r"\.")):
        load(path)
