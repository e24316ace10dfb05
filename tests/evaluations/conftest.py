"""Fixtures of evaluations: the backtests' (a dataset strategy, models on the fake model
server, backtests made through the service) and the fake model server itself."""

from tests.backtests.conftest import fake_models, make_backtest, strategy  # noqa: F401
from tests.debates.conftest import llm  # noqa: F401
