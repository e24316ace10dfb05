"""Builders shared by the provider tests."""

from __future__ import annotations

from typing import Any

from debates.providers import ModelRequest, ProviderConfig
from debates.providers.transport import RetryPolicy
from tests.fakes.llm_server import FakeLLMServer, LLMServerClient

API_KEY = "sk-test-4f9a1c2e7b3d8e6f0a5c"
FAST_RETRIES = RetryPolicy(backoff_base_s=0.01)
"""The production retry policy with pauses short enough for fast tests."""


def make_config(
    server: FakeLLMServer | LLMServerClient, provider: str = "deepseek", **overrides: Any
) -> ProviderConfig:
    """Return a config pointing ``provider`` at the fake server (path prefix ``/v1``)."""
    values: dict[str, Any] = {"model_name": "", "api_key": API_KEY, "base_url": f"{server.url}/v1"}
    values.update(overrides)
    return ProviderConfig(provider=provider, **values)


def make_request(**overrides: Any) -> ModelRequest:
    """Return a small turn request naming two candidate coins."""
    values: dict[str, Any] = {
        "system": "You are the bull. Candidate coins: BTCUSDT, ETHUSDT.",
        "user": "Round 1 of 3. Market data follows.",
        "kind": "turn",
        "personality": "bull",
        "symbols": ("BTCUSDT", "ETHUSDT"),
    }
    values.update(overrides)
    return ModelRequest(**values)
