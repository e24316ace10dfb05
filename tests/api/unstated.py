"""The refusals of the rules a schema cannot state, which the schemathesis run does not
count as valid input refused.

OpenAPI states a field's form and the rules between a create's fields that JSON Schema
can say; it cannot say that an object is the user's, that a coin is among a strategy's
or a debate's, that one date is after another, what an exchange's address is, or what a
change does to a stored object. Each operation's description says these rules; here
each is one message, on the field it names, by operation. A request the schema calls
valid that is refused for one of them is no mismatch, and only then: every field its
400 names must be refused by such a rule, with exactly such a message.
"""

from __future__ import annotations

import re
from typing import Any

# A rule's messages, by the field they name ("[]" for any index).
Rules = dict[str, str]

DATASET_WINDOW = r"Outside the dataset window of this strategy: .+\."
OUTBOUND = (
    r"\S+ (is|resolves to) an? [a-z -]+ address; the service does not call internal "
    r"addresses unless an operator allows them \(OUTBOUND_ALLOWED_ADDRESSES\)\."
)
# A debate's, a schedule's and a backtest's (debates.services.inputs.TEMPLATE_RULES).
TEMPLATE: Rules = {
    "participants[].ai_model": r"No such AI model: None\.|The \w+ mode seats the models: .+",
    "temperature_range": r"Must be \[lowest, highest\] with .+",
    "symbol": r"The bundled dataset holds no \w+; one of .+\.",
}
SCHEDULE: Rules = {
    **TEMPLATE,
    "replay_as_of": rf"{DATASET_WINDOW}|A replay needs a strategy on the dataset; .+",
    "trader": r"A replay executes only on a paper trader priced from the dataset\.",
}
STRATEGY: Rules = {
    "static_coins[]": r"\w+ is listed twice\.",
    "excluded_coins[]": r"\w+ is listed twice\.",
    "excluded_coins": r"Excludes every static coin: .+",
    "pool_url": OUTBOUND,
}
AI_MODEL: Rules = {
    "capabilities": r"(turn|brief)_effort: must be one of the model's efforts \(.*\)\.|"
    r"reasoning\.default: must be one of the efforts",
    "output_mode": r"Provider \w+ cannot decode under a JSON schema\.",
    "base_url": OUTBOUND,
}
ANSWER: Rules = {
    "decisions[].symbol": r"Not a candidate coin: .+|\w+ is decided twice\.",
    "decisions": r"At most one decision per candidate coin \(\d+\)\.",
}
FIXED = r"Cannot change once the trader exists; create a new trader\."
CREDENTIAL = r"Required for the \w+ exchange\."
PRICE_TAKEN = {"model_name": r"The price table has a row for this provider and model already\."}

UNSTATED: dict[str, Rules] = {
    # The list's filters name one of the user's own schedules or backtests.
    "GET /api/debates": {
        "schedule": r"No such schedule: \d+\.",
        "backtest": r"No such backtest: \d+\.",
    },
    "POST /api/debates": {
        **TEMPLATE,
        "participants[].kind": r"A debate has at most one human seat; .+",
        "as_of": DATASET_WINDOW,
    },
    "POST /api/schedules": SCHEDULE,
    # A change is checked against the stored schedule: the create's rules between
    # fields, stated in the schema, are rules with stored fields here.
    "PATCH /api/schedules/{schedule_id}": {
        **SCHEDULE,
        "mode_models": r"The \w+ mode takes [\w ]+ AI model\(s\); got \d+\.",
        "temperature_range": rf"Only the temperature mode takes a temperature range\.|"
        rf"{TEMPLATE['temperature_range']}",
        "trader": rf"Required when auto_execute is true\.|{SCHEDULE['trader']}",
    },
    "POST /api/backtests": {
        **TEMPLATE,
        "strategy": r"A backtest needs a strategy on the dataset; .+",
        "start": DATASET_WINDOW,
        "end": rf"{DATASET_WINDOW}|Must be after start\.|"
        r"The window holds \d+ steps of \d+ minutes; at most \d+\.",
        "baseline": r"One of off, rotate or a seat of the debate \(P1(\.\.P\d)?\)\.",
    },
    "POST /api/strategies": STRATEGY,
    "PATCH /api/strategies/{strategy_id}": {
        **STRATEGY,
        "pool_url": rf"{OUTBOUND}|Required for the \w+ coin source\.",
        "static_coins": r"The static coin source needs at least one coin\.",
        "static_coins[]": rf"{STRATEGY['static_coins[]']}|\w+ is not in the bundled dataset .+",
        "coin_source": r"oi_top ranks coins by open interest, .+",
    },
    "POST /api/ai-models": AI_MODEL,
    "PATCH /api/ai-models/{ai_model_id}": {
        **AI_MODEL,
        "base_url": rf"{OUTBOUND}|Required for provider \w+\.",
        "model_name": r"Required for provider \w+\.",
    },
    "PATCH /api/traders/{trader_id}": {
        **dict.fromkeys(("exchange", "starting_balance", "market_source"), FIXED),
        **dict.fromkeys(("api_key", "api_secret", "api_passphrase"), CREDENTIAL),
    },
    # The price table holds one row per provider and model.
    "POST /api/prices": PRICE_TAKEN,
    "PATCH /api/prices/{price_id}": PRICE_TAKEN,
    "POST /api/debates/{debate_id}/turns": ANSWER,
    "POST /api/debates/{debate_id}/votes": ANSWER,
}


def refused_by_unstated_rules(operation: str, status: int, body: Any) -> bool:
    """Say whether a 400 of ``operation`` refuses only by rules the schema cannot state:
    each field it names, each of the field's messages."""
    rules = UNSTATED.get(operation, {})
    fields = body.get("fields") if status == 400 and isinstance(body, dict) else None
    if not rules or not fields:
        return False
    return all(
        re.fullmatch(rules.get(re.sub(r"\[\d+\]", "[]", name), "(?!)"), message)
        for name, messages in fields.items()
        for message in messages
    )
