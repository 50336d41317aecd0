"""Fixtures of the command-line tests: two finished ``train`` runs, each trained once per session, and no user data folders.

Under pytest-xdist (``--dist loadgroup``) a session-scoped run is built once per worker: the tests that
use one carry its ``xdist_group`` (``cli_run`` for :func:`overrides_run`, ``cli_usage`` for
:func:`lower_case_run`), so they share a worker and the run is trained once.
"""

import json

import pytest

from keras_capsules import cli

#: A small, fast ``train``: 32 images, one epoch, no reconstruction, no augmentation, no export.
SMALL_TRAINING = ["--epochs", "1", "--batch-size", "16", "--limit", "32", "--eval-limit", "32", "--augmentation", "none",
                  "--model-arg", "reconstruction=False", "--no-export", "--quiet"]  # fmt: skip


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    monkeypatch.delenv("KERAS_CAPSULES_DATA", raising=False)
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "no-tfds"))


@pytest.fixture
def small_training():
    """:data:`SMALL_TRAINING`, a fresh list per test."""
    return list(SMALL_TRAINING)


@pytest.fixture(scope="session")
def overrides_run(tmp_path_factory):
    """``(output folder, metrics)`` of a run that overrides recipe values from the command line (2 epochs of 96 images)."""
    output = tmp_path_factory.mktemp("cli") / "run"
    code = cli.main(
        [
            "train",
            "EffCapsNet",
            "--epochs",
            "2",
            "--batch-size",
            "16",
            "--limit",
            "96",
            "--eval-limit",
            "200",
            "--output",
            str(output),
            "--learning-rate",
            "0.002",
            "--lr-decay",
            "0.5",
            "--augment",
            "mnist_shift2",
            "--model-arg",
            "reconstruction=False",
            "--no-export",
            "--quiet",
            "--validation-examples",
            "0",
        ]  # fmt: skip
    )
    assert code == 0
    with open(output / "metrics.json") as handle:
        return output, json.load(handle)


@pytest.fixture(scope="session")
def lower_case_run(tmp_path_factory):
    """``(argv, output folder, metrics)`` of a finished run trained with the model name in lower case."""
    output = tmp_path_factory.mktemp("usage") / "run"
    argv = ["train", "effcapsnet", "--output", str(output), *SMALL_TRAINING]
    assert cli.main(argv) == 0
    with open(output / "metrics.json") as handle:
        return argv, output, json.load(handle)
