"""``python -m benchmarks``: lists the registered benchmarks (``--list``) or runs one (``NAME [options]``).

A benchmark runs as its own module would (``python -m benchmarks.NAME [options]``): its ``__main__`` block, with
``sys.argv`` holding its options. The list reads each module's docstring from its source, importing nothing, so
it takes no time and needs none of the benchmarks' dependencies.
"""

import ast
import runpy
import sys
from pathlib import Path

from benchmarks import WORKLOADS

HERE = Path(__file__).resolve().parent
USAGE = "usage: python -m benchmarks --list | python -m benchmarks NAME [options]   (NAME --help: its options)"


def description(name):
    """The first paragraph of benchmark ``name``'s module docstring, on one line, without reST's double backquotes."""
    doc = ast.get_docstring(ast.parse((HERE / f"{name}.py").read_text(encoding="utf-8")))
    if not doc:
        raise ValueError(f"benchmarks: module benchmarks/{name}.py has no docstring to describe it by")
    paragraph = doc.split("\n\n")[0]
    return " ".join(line.strip() for line in paragraph.splitlines()).replace("``", "")


def listing():
    """Every registered benchmark by kind, one line each: its name and :func:`description`."""
    width = max(len(name) for names in WORKLOADS.values() for name in names)
    lines = []
    for kind, names in WORKLOADS.items():
        lines += ["", f"{kind}:"] + [f"  {name:<{width}}  {description(name)}" for name in names]
    return "\n".join(lines[1:])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE + "\n\n" + listing())
        return 0
    if argv[0] == "--list":
        print(listing())
        return 0
    name, options = argv[0], argv[1:]
    known = [n for names in WORKLOADS.values() for n in names]
    if name not in known:
        print(f"benchmarks: unknown benchmark {name!r}; expected one of {', '.join(known)}\n{USAGE}", file=sys.stderr)
        return 2
    sys.argv = [f"benchmarks/{name}.py", *options]
    runpy.run_module(f"benchmarks.{name}", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
