"""A debate's and a backtest's state fields are written in their app's transitions module
alone: read as source, no other module of the project writes them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("arena", "debates", "backtests", "traders", "evaluations", "strategies", "web", "bench")

# The state fields of each model with a lifecycle, and the one module that writes them.
STATE = {
    "Debate": (
        "debates/services/transitions.py",
        {
            "status",
            "phase",
            "current_round",
            "current_speaker",
            "current_speaker_id",
            "steps_released",
            "step_outcomes",
            "human_due_at",
            "progressed_at",
            "error",
            "started_at",
            "finished_at",
        },
    ),
    "Backtest": (
        "backtests/services/transitions.py",
        {
            "status",
            "steps_done",
            "report",
            "headline",
            "error",
            "tick_token",
            "ticked_at",
            "started_at",
            "finished_at",
        },
    ),
}


def _names(node: ast.AST) -> set[str]:
    """Return every name and attribute named in the expression ``node``."""
    found = set()
    for part in ast.walk(node):
        if isinstance(part, ast.Name):
            found.add(part.id)
        elif isinstance(part, ast.Attribute):
            found.add(part.attr)
    return found


def _strings(node: ast.AST) -> set[str]:
    return {part.value for part in ast.walk(node) if isinstance(part, ast.Constant)}


def state_writes(source: str, model: str, fields: set[str]) -> list[int]:
    """Return the lines of ``source`` that write a state field of ``model``: a queryset
    ``update``/``bulk_update`` on the model naming one (or given ``**values``, which may
    hold one), or a ``save`` of an instance
    (its ``update_fields`` naming one, or none given) held by a name that says the
    model."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        method, receiver = node.func.attr, node.func.value
        if method == "update" and model in _names(receiver):
            named = {keyword.arg for keyword in node.keywords}
            if fields & named or None in named:  # ``**values`` may hold any field
                lines.append(node.lineno)
        elif method == "bulk_update" and model in _names(receiver):
            if fields & set().union(*(_strings(arg) for arg in node.args[1:])):
                lines.append(node.lineno)
        elif method == "save" and model.lower() in " ".join(_names(receiver)).lower():
            given = [keyword.value for keyword in node.keywords if keyword.arg == "update_fields"]
            if not given or fields & _strings(given[0]):
                lines.append(node.lineno)
    return lines


def test_the_check_finds_each_kind_of_write():
    # given source that writes a debate's state in each way the check knows
    source = "\n".join(
        [
            "Debate.objects.filter(pk=1).update(status='failed')",
            "Debate.objects.bulk_update(rows, ['phase'])",
            "debate.save(update_fields=['human_due_at'])",
            "debate.save()",
            "Debate.objects.filter(pk=1).update(**fields)",
            "Debate.objects.filter(pk=1).update(name='renamed')",
            "Schedule.objects.filter(pk=1).update(status='x')",
        ]
    )
    # then it finds the five writes that may be of state fields, not the name's or
    # another model's
    assert state_writes(source, "Debate", STATE["Debate"][1]) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("model", STATE)
def test_only_the_transitions_module_writes_the_state(model):
    # given every module of the project but the tests and migrations
    owner, fields = STATE[model]
    modules = [
        path
        for app in APPS
        for path in sorted((ROOT / app).rglob("*.py"))
        if "migrations" not in path.parts
    ]
    # when their writes of the model's state fields are read
    writes = {
        str(path.relative_to(ROOT)): state_writes(path.read_text(encoding="utf-8"), model, fields)
        for path in modules
    }
    # then the transitions module writes them, and no other module does
    assert len(modules) >= 100
    assert writes.pop(owner)
    assert {path: lines for path, lines in writes.items() if lines} == {}
