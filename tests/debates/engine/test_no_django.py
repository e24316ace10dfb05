"""The engine stays pure Python: no module under debates/engine imports Django."""

import ast
import subprocess
import sys
from pathlib import Path

import debates.engine

ENGINE = Path(debates.engine.__file__).parent
MODULES = sorted(ENGINE.glob("*.py"))


def _imported_roots(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0]


def test_no_engine_module_imports_django_in_its_source():
    # given every module of the engine
    # when
    offenders = [p.name for p in MODULES if {"django", "rest_framework"} & set(_imported_roots(p))]
    # then
    assert len(MODULES) >= 8
    assert offenders == []


def test_importing_the_engine_loads_no_django_module():
    # given a fresh interpreter
    code = (
        "import sys, debates.engine.consensus, debates.engine.parsing, debates.engine.prompts; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    )
    # when
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ENGINE.parent.parent,
    )
    # then
    assert run.stdout.strip() == "[]"
