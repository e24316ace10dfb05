"""The apps depend one way: backtests above traders above debates, and ops (health and
metrics) above them all; debates imports nothing of trading, backtesting or ops, trading
nothing of backtesting or ops."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# app -> the apps it must never import
FORBIDDEN = {
    "debates": {"traders", "backtests", "ops"},
    "traders": {"backtests", "ops"},
}


def imported_modules(path: Path) -> set[str]:
    """Return every module ``path`` imports, at its top level or inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("app", FORBIDDEN)
def test_an_app_imports_nothing_of_the_apps_above_it(app):
    # given every module of the app, its migrations included
    modules = sorted((ROOT / app).rglob("*.py"))
    # when their imports are read
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            name for name in imported_modules(path) if name.split(".")[0] in FORBIDDEN[app]
        )
        for path in modules
    }
    # then none names a forbidden app
    assert len(modules) >= 10
    assert {path: names for path, names in offenders.items() if names} == {}
