"""The provider table of docs/concepts/models.md says what the model catalogue says."""

from __future__ import annotations

import re
from pathlib import Path

from debates.providers.catalog import PROVIDERS

DOC = Path(__file__).resolve().parents[3] / "docs" / "concepts" / "models.md"
_CODE = re.compile(r"`([^`]+)`")


def doc_rows() -> dict[str, tuple[str, str]]:
    """Return each provider row of the table: its first base URL and its default model."""
    rows: dict[str, tuple[str, str]] = {}
    for line in DOC.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[0].startswith("`"):
            continue
        urls = [code for code in _CODE.findall(cells[2]) if code.startswith("http")]
        models = _CODE.findall(cells[3])
        rows[cells[0].strip("`")] = (urls[0] if urls else "", models[0] if models else "")
    return rows


def test_the_docs_provider_table_matches_the_catalogue() -> None:
    # given the catalogue's providers, save the local server's (its URL is an example)
    expected = {
        provider: (info.default_base_url, info.default_model)
        for provider, info in PROVIDERS.items()
        if provider != "openai_compatible"
    }

    # when
    rows = doc_rows()
    rows.pop("openai_compatible")

    # then
    assert rows == expected
