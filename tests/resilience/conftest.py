"""The resilience suite runs whole debates with the fixtures of the debate tests."""

from tests.debates.conftest import llm, make_debate  # noqa: F401
