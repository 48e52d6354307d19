"""The README and docs/ as a reader meets them: every relative link resolves, every #anchor into a page names one of its
headings (GitHub's slugs), the README stays a short user-first page, and the pages date facts by commit and host.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.helpers.repo import REPO_ROOT

README = REPO_ROOT / "README.md"
README_MAX_BYTES = 8192
DOCS_PAGE_MAX_BYTES = 15 * 1024
PAGES = [README, *sorted((REPO_ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """Lines outside fenced code blocks, numbered from 1."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation but '-' and '_' removed, spaces → '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> Iterator[tuple[int, str]]:
    for number, line in prose_lines(page.read_text(encoding="utf-8")):
        for match in LINK.finditer(CODE_SPAN.sub("", line)):
            yield number, match.group(1)


def broken_links(page: Path) -> list[str]:
    problems = []
    for number, target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        where = f"{page.relative_to(REPO_ROOT)}:{number}: {target}"
        resolved = (page.parent / unquote(path_part)).resolve() if path_part else page
        if not resolved.exists():
            problems.append(f"{where}: no such file")
            continue
        if REPO_ROOT.resolve() not in resolved.parents and resolved != REPO_ROOT.resolve():
            problems.append(f"{where}: outside the repository")
            continue
        if anchor and resolved.suffix == ".md" and unquote(anchor) not in anchors(resolved):
            problems.append(f"{where}: no heading with anchor #{anchor} in {resolved.relative_to(REPO_ROOT.resolve())}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


@pytest.mark.parametrize("page", sorted((REPO_ROOT / "docs").glob("*.md")), ids=lambda p: p.name)
def test_every_docs_page_is_short_enough_to_read(page: Path) -> None:
    size = len(page.read_bytes())
    assert size <= DOCS_PAGE_MAX_BYTES, f"{page.name} is {size} bytes: split it by topic (limit {DOCS_PAGE_MAX_BYTES})"


def test_readme_is_short() -> None:
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; the reference belongs in docs/ (limit {README_MAX_BYTES})"


def test_readme_opens_with_the_two_commands() -> None:
    """The promise near the top: two commands that do all set-up on a fresh machine, one for the demo, one for the
    tests (.ci/run runs the second)."""
    text = README.read_text(encoding="utf-8")
    headings = [line for _, line in prose_lines(text) if line.startswith("## ")]
    assert headings[0].startswith("## Two commands (all set-up included"), headings
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in block.splitlines()] == ["make demo", "make test"]
    assert "make test" in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")


# A path into the tree that the docs name in prose (`tools/kernelwheel/wheels/elf.py`, `tests/cli/test_upload.py`).
SOURCE_PATH = re.compile(r"\b((?:tools|tests|benchmarks|python|csrc|cmake)/[\w./-]+\.(?:py|md|toml|sh|json|h|cpp|cu))\b")


@pytest.mark.parametrize("page", [*PAGES, REPO_ROOT / "tools" / "README.md"], ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_source_path_the_docs_name_exists(page: Path) -> None:
    """Modules and tests move (kernelwheel's layers): a page naming a file that is no longer there misleads."""
    named = set(SOURCE_PATH.findall(page.read_text(encoding="utf-8")))
    assert sorted(p for p in named if not (REPO_ROOT / p).exists()) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_facts_are_dated_by_commit_and_host(page: Path) -> None:
    """Measurements name the commit, the host and the date, not the round of work that made them."""
    pattern = re.compile(r"session [0-9]|device[ ]tool|lent (machine|H)", re.IGNORECASE)
    hits = [f"{number}: {line.strip()}" for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
            if pattern.search(line)]
    assert hits == []


def test_the_checker_sees_a_broken_link_and_a_missing_anchor(tmp_path: Path) -> None:
    """A control: the checker itself fails on what it must catch."""
    docs = REPO_ROOT / "docs"
    page = docs / f".test-docs-links-{tmp_path.name}.md"
    page.write_text("# Title\n\n[ok](op.md#errors) [self](#title) [gone](nope.md) [anchor](op.md#nope)\n"
                    "```\n[in code](nope2.md)\n```\n`[span](nope3.md)`\n", encoding="utf-8")
    try:
        problems = broken_links(page)
    finally:
        page.unlink()
    assert [p.split(": ", 2)[1] for p in problems] == ["nope.md", "op.md#nope"], problems
