"""tools/results/adversarial.py: slices of a test set merged into one record."""

import pytest
from repo_scripts import load_script

adversarial = load_script("tools/results/adversarial.py")


def _slice(start, end, accuracy, table, zero_gradient, seconds, seed, **extra):
    return {
        "model": "M/mnist",
        "attack": "pgd",
        "examples": end - start,
        "accuracy": accuracy,
        "table": [[0.1, table[0]], [0.3, table[1]]],
        "zero_gradient": zero_gradient,
        "seed": seed,
        "seconds": seconds,
        "images": [start, end],
        "host": "H",
        "date": "2026-12-04",
        "commit": "abc",
        **extra,
    }


def test_slices_merge_weighted_by_images():
    slices = [
        _slice(0, 1000, 0.9, (0.5, 0.1), [0.2, 0.0], 100.0, 0),
        _slice(1000, 1500, 0.6, (0.2, 0.4), [0.8, 0.6], 50.5, 1, paused_seconds=7, date="2026-12-05", commit="def"),
    ]
    merged = adversarial.merge_slices(slices)
    # by hand: (1000 * a + 500 * b) / 1500
    assert merged["examples"] == 1500
    assert merged["accuracy"] == pytest.approx(0.8)
    assert merged["table"] == [[0.1, pytest.approx(0.4)], [0.3, pytest.approx(0.2)]]
    assert merged["zero_gradient"] == [pytest.approx(0.4), pytest.approx(0.2)]
    assert merged["seconds"] == 150.5 and merged["paused_seconds"] == 7
    assert merged["seed"] == [0, 1] and merged["slices"] == [[0, 1000], [1000, 1500]]
    assert merged["date"] == "2026-12-04; 2026-12-05" and merged["commit"] == "abc; def" and merged["host"] == "H"
    assert "images" not in merged


def test_slices_must_be_consecutive_from_the_first_image():
    gap = [_slice(0, 1000, 0.9, (0.5, 0.1), [0, 0], 1.0, 0), _slice(2000, 3000, 0.9, (0.5, 0.1), [0, 0], 1.0, 2)]
    with pytest.raises(ValueError, match="not consecutive"):
        adversarial.merge_slices(gap)
