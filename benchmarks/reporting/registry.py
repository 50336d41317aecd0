"""Every workload's tables and targets, collected from the modules of :mod:`benchmarks.reporting` named after the
workloads (``benchmarks/reporting/scale.py`` declares what ``python -m benchmarks scale`` records)."""

import importlib
from pathlib import Path

from benchmarks import WORKLOADS

HERE = Path(__file__).resolve().parent
#: The registered workloads whose rows the pages show, in registry order: each has a module here, named after it.
REPORTED = tuple(name for names in WORKLOADS.values() for name in names if (HERE / f"{name}.py").exists())


def collect(modules):
    """``({table key: spec}, [verdict spec])`` declared by ``modules`` (``{workload: module}``, each with
    ``TABLES`` and optionally ``VERDICTS``); each spec gains ``workload``.

    Raises ``ValueError`` when two modules declare one table key or one row target, or a verdict names a table
    no module declares."""
    tables, verdicts, owner = {}, [], {}
    for name, module in modules.items():
        for spec in module.TABLES:
            if spec["key"] in tables:
                raise ValueError(
                    f"reporting: table {spec['key']!r} is declared by both {tables[spec['key']]['workload']} and {name}"
                )
            for target in spec["rows"]:
                if owner.setdefault(target, name) != name:
                    raise ValueError(f"reporting: row target {target!r} is shown by both {owner[target]} and {name}")
            tables[spec["key"]] = dict(spec, workload=name)
        verdicts += [dict(spec, workload=name) for spec in getattr(module, "VERDICTS", [])]
    for spec in verdicts:
        if spec["table"] not in tables:
            raise ValueError(
                f"reporting: target {spec['target']!r} of {spec['workload']} links to table {spec['table']!r}, "
                f"which no workload declares"
            )
    return tables, verdicts


#: Every table by key, and every target, of the reported workloads.
TABLES, VERDICTS = collect({name: importlib.import_module(f"benchmarks.reporting.{name}") for name in REPORTED})
