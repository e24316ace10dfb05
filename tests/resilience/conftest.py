"""The resilience suite runs whole debates with the fixtures of the debate and stream
tests."""

from tests.debates.conftest import judge_model, llm, make_debate  # noqa: F401
from tests.streams.conftest import api_token, private_redis, web  # noqa: F401
