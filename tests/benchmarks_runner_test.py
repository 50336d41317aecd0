"""``python -m benchmarks``: the registry names every benchmark module, ``--list`` describes each by its docstring's
first line, and ``NAME`` runs one as ``python -m benchmarks.NAME`` would."""

import ast
import subprocess
import sys

from repo_scripts import ROOT

import benchmarks
from benchmarks import __main__ as runner

REGISTERED = [name for names in benchmarks.WORKLOADS.values() for name in names]
#: The package's shared code, run by no one on its own.
SHARED = {"__init__", "__main__", "common", "runs", "op_counts"}


def runs_as_main(path):
    """Whether the module's source ends in an ``if __name__ == "__main__":`` block (read, not imported)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test)
        for node in tree.body
    )


def python(*arguments):
    return subprocess.run([sys.executable, *arguments], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_every_runnable_module_is_registered_once_and_nothing_else():
    modules = {p.stem: p for p in (ROOT / "benchmarks").glob("*.py")}
    runnable = {name for name, path in modules.items() if name not in SHARED and runs_as_main(path)}
    assert sorted(REGISTERED) == sorted(runnable)
    assert len(REGISTERED) == len(set(REGISTERED))
    assert not (SHARED - {"__init__", "__main__"}) & set(REGISTERED)


def test_list_describes_each_benchmark_by_its_docstring():
    done = python("-m", "benchmarks", "--list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    described = [line.split()[0] for line in lines if line.startswith("  ")]
    assert described == REGISTERED
    assert "accuracy and correctness:" in lines and "speed and memory:" in lines
    # The first line of benchmarks/scale.py's docstring, as written there.
    scale = next(line for line in lines if line.split()[:1] == ["scale"])
    assert scale.split(None, 1)[1] == (
        "Capsules at larger inputs: every application at 32, 64, 128 and 224 px RGB against the matched CNN."
    )
    # reST's double backquotes dropped: ``train_on_batch`` in benchmarks/backends.py's first line.
    assert runner.description("backends").startswith("Training step per Keras backend: train_on_batch of EffCapsNet")


def test_a_benchmark_runs_by_name_and_as_its_module():
    # report --check reads the committed run files only: both forms exit 0 on an up-to-date BENCHMARKS.md.
    for form in (["-m", "benchmarks", "report", "--check"], ["-m", "benchmarks.report", "--check"]):
        done = python(*form)
        assert done.returncode == 0, (form, done.stderr)
    helped = python("-m", "benchmarks", "report", "--help")
    assert helped.returncode == 0 and "--check" in helped.stdout


def test_an_unknown_benchmark_is_refused_naming_the_known_ones():
    done = python("-m", "benchmarks", "scales")
    assert done.returncode == 2
    assert "unknown benchmark 'scales'" in done.stderr and "scale, scale_counts" in done.stderr
