"""The documentation: the site builds with no warnings, guides run as written, notebooks show current outputs."""

import glob
import hashlib
import os
import re
import subprocess
import sys

import pytest

from keras_capsules.testing.tiers import large

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
#: Pages whose ```python blocks are executed in order, in one namespace, as a reader would run them.
EXECUTED_PAGES = ("routers/custom.md",)
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "examples", "*.ipynb")))
pytestmark = pytest.mark.xdist_group("docs")  # one worker runs a page's blocks once for all its tests


@large
def test_docs_build_strict(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'not included in the "nav"' not in result.stderr, (
        "a page is missing from mkdocs.yml's nav:\n" + result.stderr
    )
    assert (tmp_path / "site" / "api" / "routing" / "index.html").is_file()
    for notebook in NOTEBOOKS:  # rendered with their stored outputs
        name = os.path.basename(notebook)
        page = tmp_path / "site" / "examples" / name[: -len(".ipynb")] / "index.html"
        assert page.is_file(), (
            f"{name} is not in the site: link docs/examples/{name} -> ../../examples/{name} and add it to the nav"
        )
        assert re.search(r'class="[^"]*jp-OutputArea-output', page.read_text(encoding="utf-8")), (
            f"the site shows no output of {name}"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[os.path.basename(p) for p in NOTEBOOKS])
def test_notebook_outputs_are_stored_and_current(path):
    """The site shows each notebook's stored outputs: they must come from one top-to-bottom run of the
    current code cells (docs/execute_notebooks.py records a SHA-256 of them)."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    rerun = f"store them again: python docs/execute_notebooks.py examples/{os.path.basename(path)}"
    assert [cell.execution_count for cell in cells] == list(range(1, len(cells) + 1)), (
        f"outputs missing or out of order; {rerun}"
    )
    assert not [o for cell in cells for o in cell.outputs if o.output_type == "error"], (
        f"a stored output is an error; {rerun}"
    )
    digest = hashlib.sha256("\n\x00\n".join(cell.source for cell in cells).encode()).hexdigest()
    recorded = notebook.metadata.get("keras_capsules", {}).get("code_sha256")
    assert recorded == digest, f"code cells changed since the outputs were stored; {rerun}"


def code_blocks(page):
    """``[(line, source)]`` of a page's ```python blocks."""
    lines = open(os.path.join(ROOT, "docs", page), encoding="utf-8").read().splitlines()
    blocks, start = [], None
    for number, line in enumerate(lines, 1):
        if start is None and line.strip() == "```python":
            start = number + 1
        elif start is not None and line.strip() == "```":
            blocks.append((start, "\n".join(lines[start - 1 : number - 1])))
            start = None
    assert start is None, f"docs/{page}: a ```python block opened at line {start - 1} is never closed"
    return blocks


def run_block(page, line, source, namespace):
    """Executes a block so that a traceback names the page and its line numbers."""
    exec(compile("\n" * (line - 1) + source, os.path.join("docs", page), "exec"), namespace)


@pytest.fixture(scope="module")
def executed_pages():
    """Each page's namespace after its blocks that must work ran in order (run once per module).

    Routers a page registers are unregistered afterwards, so tests that run later in the same process
    and go through ``routing.available()`` see the library's routers only.
    """
    from keras_capsules.routing import registry

    before = set(registry.available())
    yield {}
    for name in set(registry.available()) - before:
        registry.unregister_router(name)


def page_namespace(executed_pages, page):
    """``(namespace, lines of the blocks run)`` of ``page``; its blocks run once, and a failure is reported
    by every test that needs them."""
    if isinstance(executed_pages.get(page), Exception):
        pytest.fail(f"docs/{page}: a block failed: {executed_pages[page]!r}")
    if page not in executed_pages:
        namespace = {"__name__": "docs_" + re.sub(r"\W", "_", page)}
        ran = []
        try:
            for line, source in code_blocks(page):
                before = set(namespace)
                run_block(page, line, source, namespace)
                # A block that defines tests (``def test_...``) is a test file: its tests run too.
                for name in [n for n in namespace if n.startswith("test_") and n not in before]:
                    namespace[name]()
                ran.append(line)
        except Exception as error:
            executed_pages[page] = error
            raise
        executed_pages[page] = (namespace, ran)
    return executed_pages[page]


@pytest.mark.parametrize("page", EXECUTED_PAGES)
def test_page_code_runs_in_order(page, executed_pages):
    namespace, ran = page_namespace(executed_pages, page)
    assert ran, f"docs/{page} has no ```python block to run"
    assert any(name.startswith("test_") for name in namespace), f"docs/{page} defines no test of its code"
