"""Fixtures of the project-wide tests."""

from tests.fakes.llm_server import llm_server

__all__ = ["llm_server"]
