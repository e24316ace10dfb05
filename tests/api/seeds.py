"""The objects a schemathesis run's requests name: one of each kind, owned by the user
who sends them, in the state each operation acts on, so that a request the schema calls
valid gets past 404 and 409 to the operation's real work.

Each object is made when a request first names it (the stored secrets at once), so a
test of one operation makes only what that operation needs; the test's requests share
them (a delete gets past 404 once). ``place`` puts their ids into a generated request:
its path parameters, and every id its body gives (a strategy, a trader, an AI model:
wherever the schema allows an id, the seeded one goes; a value the schema forbids stays,
so a negative case stays one).
It works on each case as the test receives it, not in schemathesis's ``map_*`` hooks:
the cases of its examples and coverage phases are made when the tests are collected,
before any object exists.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from backtests.models import Backtest
from debates.models import AIModel, Debate, Decision, ModelPrice, Participant, Schedule
from strategies.models import Strategy
from tests.api.conftest import EXCHANGE_KEY, EXCHANGE_PASSPHRASE, EXCHANGE_SECRET, MODEL_KEY
from tests.backtests.factories import BacktestFactory
from tests.debates.factories import (
    AIModelFactory,
    DebateFactory,
    DecisionFactory,
    MessageFactory,
    ParticipantFactory,
    ScheduleFactory,
    VoteFactory,
)
from tests.strategies.factories import StrategyFactory
from tests.traders.factories import ExecutionFactory, OrderFactory, PositionFactory, TraderFactory
from traders.models import Execution, Trader

# The coins of the seeded strategy and its debates (in the bundled dataset).
SYMBOLS = ["BTCUSDT", "ETHUSDT"]
# An instant of the bundled dataset: a debate or a schedule replays it.
AS_OF = datetime(2024, 8, 1, 12, tzinfo=UTC)
# The body keys that hold the id of a user's object, and the seeded object each names.
BODY_IDS = {"strategy": "strategy", "trader": "trader", "ai_model": "model"}


class Seeds:
    """A user's objects, made when first named; ``place`` sets a request's ids to them."""

    def __init__(self, user: Any) -> None:
        self.user = user
        # Stored secrets, made at once so that any answer, a list's too, could leak them:
        # a model's API key and an exchange account's credentials.
        AIModelFactory(owner=user, provider="openai", model_name="gpt-6.1-terra", api_key=MODEL_KEY)
        TraderFactory(
            owner=user,
            exchange="okx",
            api_key=EXCHANGE_KEY,
            api_secret=EXCHANGE_SECRET,
            api_passphrase=EXCHANGE_PASSPHRASE,
        )

    # --- One of each kind -----------------------------------------------------------------

    @cached_property
    def strategy(self) -> Strategy:
        """A strategy on the bundled dataset (the default market source)."""
        return StrategyFactory(owner=self.user, static_coins=SYMBOLS)

    @cached_property
    def model(self) -> AIModel:
        """A simulated AI model: enabled, needing no key."""
        return AIModelFactory(owner=self.user)

    @cached_property
    def trader(self) -> Trader:
        """A running paper trader priced from the dataset."""
        return TraderFactory(owner=self.user, market_source="dataset")

    @cached_property
    def schedule(self) -> Schedule:
        seats = [{"ai_model": self.model.pk, "personality": p} for p in ("bull", "bear")]
        return ScheduleFactory(owner=self.user, strategy=self.strategy, participants=seats)

    @cached_property
    def backtest(self) -> Backtest:
        """A completed backtest."""
        return BacktestFactory(
            owner=self.user, strategy=self.strategy, steps_done=6, status="completed"
        )

    @cached_property
    def running_backtest(self) -> Backtest:
        return BacktestFactory(owner=self.user, strategy=self.strategy, status="running")

    @cached_property
    def price(self) -> ModelPrice:
        """A row of the price table (staff's: the run sends its operations as staff)."""
        return ModelPrice.objects.create(
            provider="deepseek",
            input_usd_per_mtok=1,
            cached_input_usd_per_mtok=0,
            output_usd_per_mtok=2,
        )

    @cached_property
    def execution(self) -> Execution:
        """An automatic execution of a completed debate's decision, awaiting approval."""
        decision = Decision.objects.get(debate=self.completed_debate)
        return ExecutionFactory(decision=decision, trader=self.trader, status="awaiting_approval")

    @cached_property
    def booked_trader(self) -> Trader:
        """The paper trader with a position, an order and an execution on its book."""
        PositionFactory(trader=self.trader)
        OrderFactory(trader=self.trader)
        return self.execution.trader

    # --- Debates in the states the operations act on ----------------------------------------

    def _debate(self, seats: tuple[str, ...] = ("model", "model"), **state: Any) -> Debate:
        """Return a debate of the seeded strategy with ``seats`` (model or human), in
        ``state``."""
        debate = DebateFactory(
            owner=self.user, strategy=self.strategy, symbols=SYMBOLS, max_rounds=2, **state
        )
        for order, kind in enumerate(seats):
            model = self.model if kind == "model" else None
            personality = ("bull", "bear", "analyst")[order]
            ParticipantFactory(
                debate=debate,
                kind=kind,
                ai_model=model,
                personality=personality,
                speak_order=order,
            )
        return debate

    @cached_property
    def pending_debate(self) -> Debate:
        return self._debate(as_of=AS_OF)

    @cached_property
    def completed_debate(self) -> Debate:
        """A completed debate: its turns, its votes and an executable decision."""
        debate = self._debate(status="completed", phase="done", current_round=2)
        seat = debate.participants.first()
        MessageFactory(participant=seat)
        VoteFactory(ballot__participant=seat)
        DecisionFactory(debate=debate)
        return debate

    @cached_property
    def failed_debate(self) -> Debate:
        """A debate that failed in its first round's first turn."""
        debate = self._debate(
            status="failed",
            phase="opening",
            current_round=1,
            as_of=AS_OF,
            step_outcomes={"prepare": {"status": "done"}},
            error={"step": "round 1", "code": "round_failed", "message": "Every turn failed."},
        )
        seat = debate.participants.first()
        MessageFactory(participant=seat, status="error", parse_status="none")
        return debate

    @cached_property
    def held_debate(self) -> Debate:
        """A debate in the manual pace, held after its prepare step."""
        return self._debate(
            status="running",
            phase="opening",
            current_round=1,
            pace="manual",
            steps_released=1,
            step_outcomes={"prepare": {"status": "done"}},
        )

    @cached_property
    def turn_debate(self) -> Debate:
        """A debate waiting for the user's opening in its human seat."""
        return self._debate(
            seats=("human", "model"),
            status="running",
            phase="opening",
            current_round=1,
            step_outcomes={"prepare": {"status": "done"}},
        )

    @cached_property
    def vote_debate(self) -> Debate:
        """A debate whose turns are all said, waiting for the user's vote."""
        debate = self._debate(
            seats=("human", "model"), status="voting", phase="voting", current_round=2
        )
        for seat in Participant.objects.filter(debate=debate):
            for round_number in (1, 2):
                MessageFactory(participant=seat, round=round_number)
        return debate

    # --- Placing ids in a request ----------------------------------------------------------

    def place(self, case: Any) -> None:
        """Set the ids of ``case`` (path parameters, ids in its body) to seeded objects.

        The containers are assigned anew, not changed in place: schemathesis then checks
        again whether the request is still one the schema calls valid or invalid.
        """
        if case.path_parameters:
            key = (case.method.upper(), case.path)
            case.path_parameters = {
                name: self._path_object(key, name).pk for name in case.path_parameters
            }
        if isinstance(case.body, dict | list):
            case.body = self._with_ids(case.body)

    def _path_object(self, operation: tuple[str, str], name: str) -> Any:
        chosen = PATH_OBJECTS.get((*operation, name)) or PATH_OBJECTS[name]
        return chosen(self)

    def _with_ids(self, value: Any, key: str | None = None) -> Any:
        """Return ``value`` with each id the schema allows at a key of ``BODY_IDS``
        (or in ``mode_models``, ``role_model_map``) replaced by the seeded object's."""
        if isinstance(value, dict):
            models = key == "role_model_map"
            return {k: self._with_ids(v, "ai_model" if models else k) for k, v in value.items()}
        if isinstance(value, list):
            inner = "ai_model" if key == "mode_models" else key
            return [self._with_ids(item, inner) for item in value]
        is_id = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        if is_id and key in BODY_IDS:
            return getattr(self, BODY_IDS[key]).pk
        return value


# Which seeded object a path parameter names: by operation, else by parameter.
PATH_OBJECTS: dict[Any, Callable[[Seeds], Any]] = {
    "debate_id": lambda s: s.completed_debate,
    "ai_model_id": lambda s: s.model,
    "strategy_id": lambda s: s.strategy,
    "trader_id": lambda s: s.trader,
    "schedule_id": lambda s: s.schedule,
    "backtest_id": lambda s: s.backtest,
    "execution_id": lambda s: s.execution,
    "price_id": lambda s: s.price,
    **{
        ("POST", f"/api/debates/{{debate_id}}/{action}", "debate_id"): chosen
        for action, chosen in (
            ("start", lambda s: s.pending_debate),
            ("cancel", lambda s: s.pending_debate),
            ("retry", lambda s: s.failed_debate),
            ("retry-step", lambda s: s.failed_debate),
            ("advance", lambda s: s.held_debate),
            ("turns", lambda s: s.turn_debate),
            ("skip-turn", lambda s: s.turn_debate),
            ("votes", lambda s: s.vote_debate),
        )
    },
    ("POST", "/api/backtests/{backtest_id}/cancel", "backtest_id"): lambda s: s.running_backtest,
    **{
        ("GET", f"/api/traders/{{trader_id}}/{records}", "trader_id"): lambda s: s.booked_trader
        for records in ("positions", "orders", "executions", "history")
    },
}
