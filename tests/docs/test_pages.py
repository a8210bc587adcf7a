"""The pages people learn from run: every command and code block, in order (see pages.py).

Each page runs in its own empty folder, block after block, as a reader following it
would: the files it asks to save are saved, the commands run with the torchport under
test, and each must exit as the page says. A block is left out only with a written
reason (``<!-- skip: ... -->``: installs from the network).
"""

from __future__ import annotations

import re
from pathlib import Path

import page_blocks as pages
import pytest

PAGES = [
    "docs/getting-started.md",
    "docs/how-to/place.md",
    "docs/how-to/feed.md",
    "docs/how-to/diagnose.md",
    "docs/how-to/port.md",
    "docs/testing-without-a-gpu.md",
    "docs/ci.md",
]


@pytest.mark.slow  # a few torch processes per page: 5-15 s of CPU each
@pytest.mark.parametrize("page", PAGES)
def test_every_block_of_the_page_runs(page: str, tmp_path: Path) -> None:
    found = pages.blocks(pages.ROOT / page)
    assert any(block.directive != "skip" for block in found), f"{page} has nothing to run"
    pages.run_page(pages.ROOT / page, tmp_path)


def test_skips_are_few_and_say_why() -> None:
    for page in PAGES:
        found = pages.blocks(pages.ROOT / page)
        skipped = [block for block in found if block.directive == "skip"]
        assert all(len(block.argument) > 20 for block in skipped), page
        assert len(skipped) <= max(1, len(found) // 3), f"{page}: most of it is not tested"


def test_every_output_shown_is_checked() -> None:
    # a ```text block is output shown to the reader: without `<!-- output: COMMAND -->`
    # the runner would accept it as it stands, and it could go stale unnoticed
    for page in PAGES:
        for block in pages.blocks(pages.ROOT / page):
            if block.language == "text":
                assert block.directive in ("output", "skip"), f"{block.where}: unchecked output"


def test_the_docs_index_lists_every_page() -> None:
    index = (pages.DOCS / "index.md").read_text(encoding="utf-8")
    for page in PAGES:
        assert Path(page).relative_to("docs").with_suffix("").as_posix() in index, page


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, - for spaces."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_from_a_page_leads_somewhere() -> None:
    readme = (pages.ROOT / "README.md").read_text(encoding="utf-8")
    anchors = {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", readme, re.M)}
    for page in PAGES:
        path = pages.ROOT / page
        text = path.read_text(encoding="utf-8")
        for anchor in re.findall(r"github\.com/torchport/torchport#([\w-]+)", text):
            assert anchor in anchors, f"{page}: the README has no heading #{anchor}"
        for file in re.findall(r"github\.com/torchport/torchport/blob/main/([\w./-]+)", text):
            assert (pages.ROOT / file).is_file(), f"{page}: {file} does not exist"
        for target in re.findall(r"\]\(([\w./-]+\.md)(?:#[\w-]+)?\)", text):
            if target.startswith("reference/") or "/reference/" in target:
                continue  # written by Sphinx from the rules at build time
            assert (path.parent / target).is_file(), f"{page}: {target} does not exist"
