"""What ``python -m benchmarks report`` renders.

Each workload that records rows declares how they are shown in a module of this package named after it
(``benchmarks/reporting/scale.py`` for ``python -m benchmarks scale``): its ``TABLES`` (each a dict, see
:mod:`~benchmarks.reporting.cells`) and its targets, ``VERDICTS`` (see :mod:`~benchmarks.reporting.verdicts`).
:mod:`~benchmarks.reporting.registry` collects them; :mod:`~benchmarks.reporting.pages` places each table on a
page and renders the pages. These modules import no measuring code, so the report runs without a workload's
dependencies or side effects.
"""
