"""Every management command of the project says in its help what each option may be
and what it is when left out: its choices, and its default."""

from __future__ import annotations

import argparse

import pytest
from django.core.management import get_commands, load_command_class
from django.core.management.base import BaseCommand

PROJECT_APPS = {"arena", "backtests", "debates", "evaluations", "strategies", "traders", "web"}
COMMANDS = sorted(
    (app.rsplit(".", 1)[-1], name) for name, app in get_commands().items() if app in PROJECT_APPS
)


def own_options(app: str, name: str) -> list[argparse.Action]:
    """Return the options the command adds to Django's own."""
    parser = load_command_class(app, name).create_parser("manage.py", name)
    django = {action.dest for action in BaseCommand().create_parser("manage.py", name)._actions}
    return [
        action
        for action in parser._actions
        if action.option_strings and action.dest not in django | {"help"}
    ]


def test_the_project_has_its_commands():
    assert COMMANDS == [
        ("backtests", "backtest"),
        ("traders", "check_venue"),
        ("traders", "run_debate"),
    ]


@pytest.mark.parametrize(("app", "name"), COMMANDS, ids=[name for _, name in COMMANDS])
def test_every_option_with_a_default_says_it_in_its_help(app, name):
    # given each option the command adds that has a default (a flag's off is none)
    defaulted = [
        action
        for action in own_options(app, name)
        if (action.default not in (None, False) and action.nargs != 0)
        or isinstance(action, argparse.BooleanOptionalAction)
    ]
    # then its help says what the default is
    assert [action.option_strings[0] for action in defaulted if "default" not in action.help] == []


def test_the_backtests_options_of_fixed_values_offer_their_choices():
    choices = {
        action.option_strings[0]: list(action.choices)
        for action in own_options("backtests", "backtest")
        if action.choices is not None
    }
    assert choices == {
        "--rounds": [2, 3, 4, 5],
        "--variant": ["balanced", "aggressive", "conservative", "scalping"],
        "--coins": ["primary", "all"],
        "--book": ["aware", "blind"],
        "--cache": ["off", "use", "refresh"],
        "--level": ["auto", "L1", "L2"],
    }
