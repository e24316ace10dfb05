"""``run_debate`` refuses bad flags in one line naming the flag, writing no debate."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from debates.models import Debate

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (("--rounds", "9"), "--rounds: Must be between 2 and 5; got 9."),
        (("--rounds", "0"), "--rounds: Must be between 2 and 5; got 0."),
        (("--timeout", "0"), "Error: argument --timeout: must be more than 0 seconds; got 0"),
        (("--timeout", "soon"), "Error: argument --timeout: invalid seconds value: 'soon'"),
        (
            ("--symbol", "PEPE"),
            "--symbol: The bundled dataset holds no PEPEUSDT; one of BTCUSDT, ETHUSDT, "
            "SOLUSDT, XRPUSDT, DOGEUSDT, AVAXUSDT, LINKUSDT.",
        ),
        (
            ("--as-of", "2023-06-01T00:00Z"),
            "--as-of: Outside the dataset window of this strategy: "
            "2024-08-05T03:00:00+00:00 .. 2024-09-05T00:00:00+00:00.",
        ),
        (("--as-of", "2024-08-05T12:00"), "--as-of: give a time zone, e.g. 2024-08-05T12:00Z"),
        (
            ("--participants", "bull,hawk"),
            "--participants: unknown hawk; one of bull, bear, analyst, contrarian, risk_manager",
        ),
        (("--models", "a,b"), "--models: give model ids, e.g. --models 3,4,5"),
        (("--participants", ""), "--participants: A debate needs 2 to 6 participants; got 0."),
        (("--user", " "), "--user: give a user name"),
    ],
    ids=[
        "rounds",
        "no-rounds",
        "no-timeout",
        "timeout-not-a-number",
        "symbol-not-in-the-dataset",
        "as-of-outside",
        "naive-as-of",
        "personality",
        "models",
        "no-participants",
        "no-user",
    ],
)
def test_a_bad_flag_is_refused_in_one_line_naming_it(user, flags, line):
    # when the command runs with one bad flag
    with pytest.raises(CommandError) as refused:
        call_command("run_debate", "--user", user.username, *flags)
    # then the error is that one line, and no debate was written
    assert str(refused.value) == line
    assert "\n" not in str(refused.value)
    assert not Debate.objects.exists()


def test_the_debate_is_named_after_its_instant_in_utc(user, monkeypatch):
    # given a debate that never starts (its start is where the name is long written)
    monkeypatch.setattr(
        "traders.management.commands.run_debate.debate_start",
        lambda debate_id: (_ for _ in ()).throw(CommandError("stopped after the create")),
    )
    # when the instant is given in another time zone
    with pytest.raises(CommandError):
        call_command("run_debate", "--user", user.username, "--as-of", "2024-08-20T14:00+02:00")
    # then the name gives it in UTC, the zone it says
    assert Debate.objects.get().name == "BTCUSDT at 2024-08-20 12:00 UTC"
