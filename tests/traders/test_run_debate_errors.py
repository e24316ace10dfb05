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
    ],
    ids=[
        "rounds",
        "symbol-not-in-the-dataset",
        "as-of-outside",
        "naive-as-of",
        "personality",
        "models",
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
