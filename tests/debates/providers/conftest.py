"""Fixtures for the provider tests."""

from tests.fakes.llm_server import llm_server

__all__ = ["llm_server"]
