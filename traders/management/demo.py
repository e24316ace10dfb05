"""What ``run_debate`` sets up for a demo: its strategy, the local model, and the fresh
paper account it executes on."""

from __future__ import annotations

import subprocess

from django.conf import settings
from django.core.management.base import CommandError
from rich.console import Console

from debates.models import AIModel
from strategies.market.exceptions import InvalidSymbolError
from strategies.market.symbols import normalize_symbol
from strategies.models import ExecuteCoins, Strategy
from traders.models import Trader

DEMO_TRADER = "Demo paper account"
# The script that installs, starts and stops the local model's server.
LOCAL_MODEL_SCRIPT = settings.BASE_DIR / "scripts" / "local-model"
DEMO_COINS = ("BTCUSDT", "ETHUSDT", "SOLUSDT")
# The local model (scripts/local-model): a 0.5B model answering on two CPU cores reads a
# prompt at about 47 tokens/s, so its debates keep theirs small: one coin, 1h candles, 6 rows.
LOCAL_MODEL = {
    "name": "Local model (Qwen2.5-Coder 0.5B on llama.cpp)",
    "model_name": "qwen2.5-coder-0.5b-instruct",
    "output_mode": "json_schema",
    "temperature": 0.3,
    "max_tokens": 400,
    "timeout_seconds": 180,
}


def demo_trader(owner) -> Trader:
    """Return a fresh demo paper account: each run starts on a full balance with no
    position open, so running the demo again executes again."""
    number = Trader.objects.filter(owner=owner, name__startswith=DEMO_TRADER).count() + 1
    name = DEMO_TRADER if number == 1 else f"{DEMO_TRADER} {number}"
    return Trader.objects.create(owner=owner, name=name, exchange="paper")


def local_model(console: Console, owner) -> AIModel:
    """Start the local model unless it answers already; return its configuration."""
    console.print("Starting the local model (scripts/local-model start) ...")
    # The project's own script, with no input from the user.
    started = subprocess.run(  # noqa: S603
        [LOCAL_MODEL_SCRIPT, "start"], capture_output=True, text=True
    )
    if started.returncode != 0:
        raise CommandError(f"the local model did not start: {started.stderr.strip()}")
    base_url = started.stdout.strip().splitlines()[-1]
    model, _ = AIModel.objects.update_or_create(
        owner=owner,
        provider="openai_compatible",
        name=LOCAL_MODEL["name"],
        defaults={
            **{k: v for k, v in LOCAL_MODEL.items() if k != "name"},
            "base_url": base_url,
        },
    )
    return model


def local_model_left(console: Console, model: AIModel) -> None:
    """Say that the local model's server goes on running after the run (so the next run
    starts at once), and how to stop it."""
    console.print(
        f"The local model's server is still running at {model.base_url}, for the next "
        "run; scripts/local-model stop stops it."
    )


def demo_strategy(owner, single_coin: str | None) -> Strategy:
    """Return the demo strategy: the majors on the bundled dataset, or, for the local
    model, ``single_coin`` alone on 1h candles, 6 rows."""
    if single_coin is None:
        strategy, _ = Strategy.objects.get_or_create(
            owner=owner,
            name="Demo: majors on the bundled dataset",
            defaults={
                "static_coins": list(DEMO_COINS),
                "market_source": "dataset",
                "execute_coins": ExecuteCoins.ALL,
            },
        )
        return strategy
    try:
        symbol = normalize_symbol(single_coin)
    except InvalidSymbolError as exc:
        raise CommandError(f"--symbol: {exc}") from exc
    strategy, _ = Strategy.objects.update_or_create(
        owner=owner,
        name=f"Local model: {symbol} on 1h",
        defaults={
            "static_coins": [symbol],
            "max_coins": 1,
            "market_source": "dataset",
            "timeframes": ["1h"],
            "rows_per_timeframe": 6,
        },
    )
    return strategy
