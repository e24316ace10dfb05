"""``manage.py backtest`` refuses bad flags in one line naming the flags, writing no
backtest, as ``run_debate`` does; a refusal no flag caused (a quota) is its message, and
``--cancel`` stops a backtest the quota names."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from backtests.models import Backtest
from tests.backtests.factories import BacktestFactory

pytestmark = pytest.mark.django_db

WINDOW = ("--from", "2024-08-10", "--to", "2024-08-12")


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (
            ("--every", "7m"),
            "--every: Must be at least 15 minutes and a multiple of 15; got 7.",
        ),
        (
            ("--every", "4h", "--horizon", "10m", "--balance", "-5"),
            "--horizon: Must be at least 15 minutes and a multiple of 15; got 10. "
            "--balance: Must be at least 12 and at most 1000000000; got -5.",
        ),
        (
            ("--from", "2024-05-01", "--to", "2024-08-12"),
            "--from: Outside the dataset window of this strategy: "
            "2024-05-08T12:00:00+00:00 .. 2024-09-05T00:00:00+00:00.",
        ),
        (
            ("--symbol", "PEPE"),
            "--symbol: The bundled dataset holds no PEPEUSDT; one of BTCUSDT, ETHUSDT, "
            "SOLUSDT, XRPUSDT, DOGEUSDT, AVAXUSDT, LINKUSDT.",
        ),
        (
            ("--every", "4"),
            "--every: '4': give minutes, hours or days, e.g. 15m, 4h, 1d",
        ),
        (("--from", "soon"), "--from: Invalid isoformat string: 'soon'"),
        (("--timeout", "-5"), "Error: argument --timeout: must be more than 0 seconds; got -5"),
        (("--user", ""), "--user: give a user name"),
    ],
    ids=["step", "horizon-and-balance", "window", "symbol", "step-unit", "from", "timeout", "user"],
)
def test_a_bad_flag_is_refused_in_one_line_naming_it(user, flags, line):
    # when the command runs with bad flags
    with pytest.raises(CommandError) as refused:
        call_command("backtest", "--user", user.username, *WINDOW, *flags)
    # then the error is that one line, and no backtest was written
    assert str(refused.value) == line
    assert not Backtest.objects.exists()


def test_the_running_backtests_quota_names_them_and_how_to_cancel_one(user):
    # given the one backtest a user may have running (its command killed, say)
    running = BacktestFactory(owner=user, status="running", name="BTC", steps_done=2)
    # when the command starts another
    with pytest.raises(CommandError) as refused:
        call_command("backtest", "--user", user.username, *WINDOW)
    # then the error is the quota's message, not a field's name, with the way out
    assert str(refused.value) == (
        "You have as many backtests running as one user may (at most 1). "
        f"Running: {running.pk} (BTC, 2/6); --cancel ID stops one."
    )
    assert Backtest.objects.count() == 1


def test_cancel_stops_the_users_backtest_and_no_other(user, other_user, capsys):
    # given a running backtest of the user and one of another user
    mine = BacktestFactory(owner=user, status="running")
    theirs = BacktestFactory(owner=other_user, status="running")
    # when the command cancels each for the user
    call_command("backtest", "--user", user.username, "--cancel", str(mine.pk))
    with pytest.raises(CommandError) as refused:
        call_command("backtest", "--user", user.username, "--cancel", str(theirs.pk))
    # then the user's is cancelled and said so; the other user's is not found, and runs on
    assert f"Backtest {mine.pk} cancelled." in capsys.readouterr().out
    assert str(refused.value) == "--cancel: Backtest not found."
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.status, theirs.status) == ("cancelled", "running")


def test_a_timeout_cancels_the_backtest_it_gave_up_on(user):
    # given no worker: the backtest the command starts never gets past pending
    # when the command's timeout passes
    with pytest.raises(CommandError) as refused:
        call_command("backtest", "--user", user.username, *WINDOW, "--timeout", "0.5")
    # then it says so naming the flag, and the backtest does not stay behind, running
    backtest = Backtest.objects.get()
    assert str(refused.value) == f"--timeout: 0.5 s passed; backtest {backtest.pk} cancelled."
    assert backtest.status == "cancelled"


def test_the_backtest_is_named_after_its_window_in_utc(user):
    # when the window is given in another time zone (no worker: it stays pending)
    with pytest.raises(CommandError):
        call_command(
            "backtest",
            *("--user", user.username, "--every", "1h", "--timeout", "0.2"),
            *("--from", "2024-08-21T01:00+05:00", "--to", "2024-08-21T04:00+05:00"),
        )
    # then its name gives the window's days in UTC, the zone of its stored instants
    backtest = Backtest.objects.get()
    assert backtest.name == "BTCUSDT 2024-08-20..2024-08-20 every 1h"
    assert backtest.start.isoformat() == "2024-08-20T20:00:00+00:00"
