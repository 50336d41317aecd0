"""The README's test command (``-n 2 --dist loadgroup``) keeps each ``xdist_group`` on one worker.

Several modules (``training/distribute_test.py``, ``export/formats_test.py``, the ``cli/`` tests)
build costly module- or session-scoped fixtures, such as every application fitted under
MirroredStrategy and exported, and mark their tests with one ``xdist_group`` so that the fixture is built once.
pytest-xdist groups them by appending ``@<group>`` to each node id on the worker. With pytest 9.2 that rename
silently stopped working (pytest-dev/pytest-xdist#1386): the tests were spread over both workers and each
fixture was built once per worker (in one run's ``--durations``, the MirroredStrategy fixture's set-up, about 10
minutes on shared cores, appeared twice). The rename is checked here; the check fails if it stops working again.
"""

import pytest


@pytest.mark.xdist_group("loadgroup_check")
def test_loadgroup_renames_grouped_tests_so_the_scheduler_keeps_them_together(request):
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("checks pytest-xdist's --dist loadgroup; this run does not use it (the README's test command does)")
    assert request.node.nodeid.endswith("@loadgroup_check"), (
        f"pytest-xdist did not tag this test with its xdist_group (node id {request.node.nodeid!r}), so grouped tests "
        f"are spread over the workers and their module-scoped fixtures are built once per worker. pytest "
        f"{pytest.__version__} with this pytest-xdist is affected (pytest-dev/pytest-xdist#1386): install the test "
        f"extra's pytest pin."
    )
