"""The docs hold together: every relative link names a file that exists, and the README
stays a front door that links every page under docs/."""
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
README_MAX_LINES = 200

INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
CODE_SPAN = re.compile(r"(`+).*?\1")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def markdown_files():
    """The repository's Markdown files, tracked or new (not ignored), that exist."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
                            cwd=REPO, capture_output=True, text=True, check=True).stdout.splitlines()
    return sorted({REPO / name for name in listed if (REPO / name).is_file()})


def links(path):
    """(line number, target) of each Markdown link in the file, outside code."""
    fence = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        opening = FENCE.match(line)
        if opening:
            marker = opening.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is not None:
            continue
        prose = CODE_SPAN.sub("", line)
        for match in INLINE_LINK.finditer(prose):
            yield number, match.group(1)
        definition = REFERENCE_DEFINITION.match(prose)
        if definition:
            yield number, definition.group(1)


def local_target(source, target):
    """The file a relative link names, or None for a URL or an anchor in the same page."""
    if URL_SCHEME.match(target) or target.startswith("#"):
        return None
    file_part = unquote(target.split("#", 1)[0].split("?", 1)[0])
    base = REPO if file_part.startswith("/") else source.parent
    return (base / file_part.lstrip("/")).resolve()


def repo_relative(path):
    try:
        return path.relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def test_every_relative_link_in_a_doc_names_a_file_that_exists():
    broken = []
    for source in markdown_files():
        for number, target in links(source):
            resolved = local_target(source, target)
            if resolved is None or resolved.exists():
                continue
            broken.append(f"{repo_relative(source)}:{number} -> {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def test_the_readme_is_a_front_door_of_at_most_200_lines():
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to a page under docs/"


def test_every_page_under_docs_is_linked_from_the_readme():
    linked = {local_target(README, target) for _, target in links(README)}
    unlinked = [repo_relative(page) for page in sorted(DOCS.glob("*.md")) if page.resolve() not in linked]
    assert not unlinked, "pages under docs/ the README does not link: " + ", ".join(unlinked)
