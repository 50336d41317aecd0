"""What ``python -m benchmarks report`` renders: the cells (:mod:`~benchmarks.reporting.cells`), one module of table
specs per family of tables (:mod:`~benchmarks.reporting.peers`, :mod:`~benchmarks.reporting.scaling`,
:mod:`~benchmarks.reporting.routers`, :mod:`~benchmarks.reporting.memory`, :mod:`~benchmarks.reporting.checks`),
the targets and their verdicts (:mod:`~benchmarks.reporting.verdicts`) and the pages that hold them
(:mod:`~benchmarks.reporting.pages`)."""
