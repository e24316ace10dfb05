"""The console of the commands: Django's colour flags, and tables never cut short."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from traders.management.console import command_console, print_whole


def test_no_color_prints_plain_text_and_force_color_styles_a_pipe(capsys):
    # when a styled line is printed on each console, stdout being a pipe here
    for flags in ({"no_color": True}, {"force_color": True}, {}):
        command_console(**flags).print("[bold red]LONG[/] 64")
    plain, forced, default = capsys.readouterr().out.splitlines()
    # then --no-color prints no escape code, --force-color styles it, a pipe has none
    assert plain == default == "LONG 64"
    assert forced.startswith("\x1b[") and "LONG" in forced


def test_a_table_wider_than_the_console_is_printed_whole():
    # given a console 40 columns wide and a table of figures that needs more
    out = io.StringIO()
    console = Console(file=out, width=40)
    table = Table(title="Backtest")
    for column in ("rule", "equity", "return", "max DD", "Sharpe", "fees"):
        table.add_column(column, no_wrap=True)
    table.add_row("votes by confidence", "980282704.12", "-1.97%", "20.44%", "4.15", "1467300.77")
    # when it is printed
    print_whole(console, table)
    # then every figure is there whole, none cut to "…", and the console keeps its width
    printed = out.getvalue()
    assert "…" not in printed
    for figure in ("votes by confidence", "980282704.12", "1467300.77", "20.44%"):
        assert figure in printed
    assert console.width == 40
