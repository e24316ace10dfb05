"""The documentation builds strictly: the MkDocs site of docs/ has no broken link, anchor
or page left out of its navigation, and the README stays a short entry to it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_MOST_LINES = 200


def mkdocs_build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """Build the site of ``root`` (its mkdocs.yml and docs/) into ``site`` with --strict."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_site_builds_strictly(tmp_path):
    # when the site is built as `make docs` builds it
    built = mkdocs_build(ROOT, tmp_path / "site")
    # then the build passes, every page written
    assert built.returncode == 0, built.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "concepts" / "steps" / "index.html").exists()


@pytest.mark.parametrize(
    ("link", "warning"),
    [
        ("[the API](nowhere.md)", "'nowhere.md', but the target is not found"),
        ("[the API](api.md#no-such-part)", "does not contain an anchor '#no-such-part'"),
    ],
    ids=["missing-page", "missing-anchor"],
)
def test_a_broken_link_between_pages_fails_the_build(tmp_path, link, warning):
    # given a copy of the site whose home page links to what does not exist
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    index = tmp_path / "docs" / "index.md"
    index.write_text(index.read_text() + f"\nSee {link}.\n")
    # when it is built strictly
    built = mkdocs_build(tmp_path, tmp_path / "site")
    # then the build fails and names the link
    assert built.returncode != 0
    assert warning in built.stderr


def test_a_page_left_out_of_the_navigation_fails_the_build(tmp_path):
    # given a copy of the site with a page that the navigation does not list
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    (tmp_path / "docs" / "orphan.md").write_text("# An orphan\n")
    # when it is built strictly
    built = mkdocs_build(tmp_path, tmp_path / "site")
    # then the build fails and names the page
    assert built.returncode != 0
    assert "orphan.md" in built.stderr


def test_the_readme_opens_on_the_two_commands_and_stays_short():
    # given the README
    lines = (ROOT / "README.md").read_text().splitlines()
    # then its first command lines are the demo and the tests, and it is short
    commands = [line.split()[1] for line in lines[:6] if line.startswith("make ")]
    assert commands == ["demo", "test"]
    assert len(lines) <= README_MOST_LINES
