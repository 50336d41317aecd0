"""The targets' verdicts: how a target's spec reads the committed runs, and the item builders several share.

A target (a ``VERDICTS`` entry of a workload's module in :mod:`benchmarks.reporting`) is a dict: ``target``
(its text), ``rows`` (the row targets it reads), ``items(rows) -> [(scope, values, figure)]`` (one run's
figures), ``bound`` (``(op, limit)``: a value is within it when ``value op limit``), ``table`` (the key of the
table it links to), optionally ``summary`` (its line in BENCHMARKS.md's ratios of ours to theirs) and
``aggregate="median"``. A target is met on a host when every value is within the bound; with
``aggregate="median"`` the host's value is the median of its runs' values (a rule fixed before the third of
those runs). A verdict belongs to its host.
"""

import statistics

from benchmarks.reporting.cells import num, r2, ratio


def peer_ratios(rows):
    return [(row, ratio(row["ours_ms"], row["peer_ms"])) for row in rows if row.get("peer_ms") is not None]


def joined(pairs, label):
    return ", ".join(f"{label(row)} {r2(value)}".strip() for row, value in pairs)


def by_ratio(label):
    def items(rows):
        pairs = peer_ratios(rows)
        return [("", [v for _, v in pairs], joined(pairs, label).strip())]

    return items


def max_item(key, select, unit):
    def items(rows):
        sel = [r for r in rows if select(r)]
        return [("", [r[key] for r in sel], ", ".join(f"{r['configuration']} {num(r[key])} {unit}" for r in sel))]

    return items


def within(value, bound):
    op, limit = bound
    return {"<=": value <= limit, "<": value < limit, ">=": value >= limit}[op]


def verdict_rows(spec, runs):
    """[(host name, [(scope, figure, met)], runs)] for one target: one entry per host."""
    per_host = {}
    for run in runs:
        targets = spec["rows"] if isinstance(spec["rows"], tuple) else (spec["rows"],)
        rows = [r for r in run["rows"] if r["target"] in targets]
        for scope, values, figure in spec["items"](rows) if rows else []:
            if values:
                per_host.setdefault(run["host"]["id"], {}).setdefault(scope, []).append((run, values, figure))
    out = []
    for scopes in per_host.values():
        results, used = [], []
        for scope, found in scopes.items():
            used += [run for run, _, _ in found if run not in used]
            if spec.get("aggregate") == "median":
                each = [values[0] for _, values, _ in found]
                value = statistics.median(each)
                figure = (
                    f"median of {len(each)} runs {r2(value)} ({', '.join(r2(v) for v in each)} in the order run)"
                    if len(each) > 1
                    else r2(value)
                )
                results.append((scope, figure, within(value, spec["bound"])))
                continue
            if len(found) > 1:
                raise ValueError(
                    f"report: {spec['target']!r} has {len(found)} runs on host {found[0][0]['host']['name']!r}; "
                    "move the superseded one out of benchmarks/results/"
                )
            _, values, figure = found[0]
            results.append((scope, figure, all(within(v, spec["bound"]) for v in values)))
        out.append((used[0]["host"]["name"], results, used))
    return out
