"""A backtest replays the trading loop (``book: aware``): each step's votes see the
simulated account the earlier steps made, at the step's instant, and nothing later."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from backtests.models import BacktestStep
from debates.engine.book import Book
from tests.backtests import reference
from tests.backtests.conftest import wait_until_done
from tests.fakes.llm_server import Reply, default_answer

START = datetime(2024, 8, 4, 12, tzinfo=UTC)  # 1h candles until 5 August, 15m after
END = datetime(2024, 8, 7, 12, tzinfo=UTC)
EVERY = timedelta(hours=4)
SEATS = ("bull", "bear", "analyst")
# What a vote prompt shows on BTC while the account holds a long there.
HOLDING_A_LONG = "BTCUSDT: long BTCUSDT"


def close_what_is_held(llm) -> None:
    """Script the models: every turn, and every vote finding nothing held, opens a long
    on BTC (the default answer); a vote finding the long held closes it."""
    close = default_answer("BTCUSDT ETHUSDT SOLUSDT", "close_long")
    llm.add_rule(Reply.answer(close, match=HOLDING_A_LONG))


def is_vote(prompt: str) -> bool:
    return "casts a final vote" in prompt


def iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def test_an_aware_run_equals_an_independent_simulation_with_the_book_fed_back(
    celery_worker, llm, make_backtest
):
    # given models that open a long on BTC, and close it when their vote sees it held
    close_what_is_held(llm)
    # when a 3-day aware backtest at 4h runs (its default)
    backtest = wait_until_done(make_backtest(start=START, end=END).pk, timeout=300)
    assert (backtest.status, backtest.book) == ("completed", "aware"), backtest.error
    # then the debate's equity and trades are the independent simulation's, in which
    # each step closes the long it finds open (after every stop and target since) or
    # else opens one
    expected = reference.always_long(
        **reference.FAKE_LONG, start=START, end=END, every=EVERY, close_when_held=True
    )
    debate = next(r for r in backtest.report["rules"] if r["key"] == "debate")
    assert [(at, Decimal(str(value))) for at, value in debate["equity"]] == expected.curve
    assert [(t["reason"], Decimal(str(t["pnl"]))) for t in debate["trades"]] == [
        (t["reason"], t["pnl"]) for t in expected.trades
    ]
    # and positions closed by decision and by the stop or target, none refused as open
    assert debate["closed_by"]["decision"] >= 3
    assert debate["closed_by"]["stop"] + debate["closed_by"]["target"] >= 1
    assert debate["refusal_reasons"] == []
    # and the votes saw the book, the rounds did not
    prompts = [r.prompt for r in llm.requests]
    assert sum(HOLDING_A_LONG in p for p in prompts if is_vote(p)) == 3 * sum(
        t["reason"] == "decision" for t in expected.trades
    )
    assert not [p for p in prompts if not is_vote(p) and "Your trader's account" in p]


def test_no_vote_sees_anything_after_its_instant(celery_worker, llm, make_backtest):
    # given an aware backtest of models closing what they hold, over two days
    close_what_is_held(llm)
    backtest = wait_until_done(make_backtest(start=START, end=START + timedelta(days=2)).pk)
    assert backtest.status == "completed", backtest.error
    # then each step's book is at its instant, starts from the starting balance, and
    # holds nothing opened, closed or reviewed after it
    steps = BacktestStep.objects.filter(backtest=backtest).select_related("debate")
    horizon = timedelta(minutes=backtest.horizon_minutes)
    for step in steps.order_by("index"):
        book = Book.from_dict(step.debate.book)
        assert book.as_of == iso(step.as_of)
        assert all(p.opened_at <= book.as_of for p in book.positions)
        assert all(t.closed_at <= book.as_of for t in book.closed)
        calls = [c for record in step.debate.track_record.values() for c in record]
        assert all(datetime.fromisoformat(c["at"]) + horizon <= step.as_of for c in calls), (
            step.index
        )
        if step.index == 0:
            assert (book.equity, book.positions, book.closed) == (1000.0, (), ())
    # and the later steps' voters were shown the reviewed calls of the earlier ones
    last = steps.order_by("-index").first().debate.track_record
    assert all(len(record) == 5 for record in last.values())


def test_a_blind_rerun_of_an_aware_window_calls_the_models_only_for_its_votes(
    celery_worker, llm, make_backtest, fake_models
):
    # given an aware one-day backtest, its calls cached
    close_what_is_held(llm)
    models = fake_models(len(SEATS))
    window = {"start": START, "end": START + timedelta(days=1), "models": models}
    aware = wait_until_done(make_backtest(**window).pk)
    assert aware.status == "completed", aware.error
    made = len(llm.requests)
    # when the same window runs blind
    blind = wait_until_done(make_backtest(book="blind", **window).pk)
    # then it shared every round through the cache and called the models for its votes
    # alone, none of which holds an account
    assert blind.status == "completed", blind.error
    calls = [r.prompt for r in llm.requests[made:]]
    assert len(calls) == 6 * len(SEATS) and all(is_vote(p) for p in calls)
    assert not [p for p in calls if "Your trader's account" in p or "track record" in p]
    steps = BacktestStep.objects.filter(backtest=blind).select_related("debate")
    assert {(s.debate.book, s.debate.track_record) for s in steps} == {(None, None)}
