"""The front door stays short and the code's comments say why, not how fast or since when
(issue 15): a README a newcomer reads in five minutes, and no timings or session history in
the source."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A timing (``~80 ns``, ``0.3 µs``) or a piece of history (``session 3``) in a comment.
NOT_WHY = re.compile(r"\b\d+(\.\d+)?\s?(ns|µs|us)\b|\bsession \d+\b", re.IGNORECASE)


def test_the_readme_is_at_most_200_lines_and_links_to_the_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).is_file(), link


def test_no_comment_or_docstring_in_src_gives_a_timing_or_a_session() -> None:
    found = []
    for path in sorted((ROOT / "src" / "tether").rglob("*.py")):
        source = path.read_text()
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.COMMENT, tokenize.STRING) and NOT_WHY.search(token.string):
                found.append(f"{path.relative_to(ROOT)}:{token.start[0]}: {token.string[:80]}")
    assert found == []
