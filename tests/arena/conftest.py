"""Fixtures of the project-wide tests."""

from typing import Any

from tests.fakes.llm_server import llm_server

__all__ = ["ai_model_admin_form", "llm_server"]


def ai_model_admin_form(owner: Any, **fields: str) -> dict[str, Any]:
    """Return what the admin's form for an AI model of ``owner`` sends: an enabled model
    with no key, at the form's defaults, ``fields`` (name, provider, ...) added."""
    return {
        "owner": owner.pk,
        "api_key": "",
        "temperature": "0.5",
        "max_tokens": "1000",
        "timeout_seconds": "60",
        "output_mode": "tagged",
        "enabled": "on",
        **fields,
    }
