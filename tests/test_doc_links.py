"""The documentation's links lead somewhere: every relative Markdown link of the README, CONTRIBUTING.md and docs/
names a file or folder of the repository (and a `#section` a heading of that page), and every `docs/...` path named
in prose, code comments or docstrings exists, so moving a page cannot leave its readers at a dead end."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").rglob("*.md"))]
# Guide pages that other branches add with their features (serve, the guarantees, the training data formats): the
# guide links them already. Once such a page exists it is checked like any other.
PENDING: set[str] = set()

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
# A path under docs/ named in text: letters, digits, _ . / - only (so `docs/results/<name>/` templates are not paths).
MENTION = re.compile(r"(?<![\w/.-])docs/[\w./-]*\.(?:md|json|jsonl)\b")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text))


def _anchors(page: Path) -> set[str]:
    body = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", body, re.MULTILINE)}


def _links(page: Path) -> list[str]:
    body = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [target for target in LINK.findall(body) if not re.match(r"[a-z]+:", target)]  # not http:, mailto:


def _relative(path: Path) -> str:
    return path.resolve().relative_to(REPO).as_posix()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_leads_to_a_file_and_section(page: Path) -> None:
    broken = []
    for target in _links(page):
        path_part, _, anchor = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        if not destination.is_relative_to(REPO):
            broken.append(f"{target} (outside the repository)")
        elif not destination.exists():
            if _relative(destination) not in PENDING:
                broken.append(f"{target} (no such file)")
        elif anchor and destination.suffix == ".md" and anchor not in _anchors(destination):
            broken.append(f"{target} (no heading #{anchor} in {_relative(destination)})")
    assert not broken, f"{page.relative_to(REPO)}: broken links: {broken}"


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    suffixes = {".md", ".py", ".rs", ".toml", ".pyi", ".sh", ".txt"}
    names = [line for line in listed.stdout.splitlines() if not line.startswith("docs/results/")]
    return [REPO / n for n in names if Path(n).suffix in suffixes or Path(n).name in {"Makefile", "run"}]


def test_every_docs_path_named_in_text_exists() -> None:
    missing = []
    for file in _tracked_text_files():
        if not file.is_file():  # listed but deleted in the working tree
            continue
        for mention in MENTION.findall(file.read_text(encoding="utf-8", errors="replace")):
            if not (REPO / mention).exists() and mention not in PENDING:
                missing.append(f"{file.relative_to(REPO)}: {mention}")
    assert not missing, "paths under docs/ that do not exist:\n" + "\n".join(missing)


def test_the_checks_see_links_and_mentions() -> None:
    """The patterns find what they are meant to find (a check that matches nothing passes vacuously)."""
    assert _links(REPO / "README.md"), "no relative link found in the README"
    assert MENTION.findall("see docs/research/routing.md, not docs/results/<name>/x") == ["docs/research/routing.md"]
    assert _slug("How tables are read") == "how-tables-are-read"
    assert _slug("`score` on more cores") == "score-on-more-cores"
