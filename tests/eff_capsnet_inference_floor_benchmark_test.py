"""benchmarks/eff_capsnet_inference_floor.py: the batch-norm folding, each variant's rounds -> the run file's
``effcaps-floor`` rows, and the report's sentence read from the run file it writes."""

import datetime
import json
import os

import keras
import numpy as np

from benchmarks import eff_capsnet_inference_floor as floor
from benchmarks import report

SPAN = (datetime.datetime(2026, 12, 5, 11, 5), datetime.datetime(2026, 12, 5, 11, 9))
MEDIANS = {
    floor.REFERENCE: [0.0130, 0.0140, 0.0135],
    floor.COMPILED: [0.0125, 0.0130],
    floor.FOLDED: [0.0120],
    floor.CONVOLUTIONS: [0.0100, 0.0110],
}


def test_a_folded_convolution_equals_the_batch_norm_then_the_convolution():
    norm = keras.layers.BatchNormalization(epsilon=1e-3)
    conv = keras.layers.Conv2D(4, 3, activation="relu")
    h = np.random.default_rng(0).normal(size=(2, 6, 6, 3)).astype("float32")
    conv(norm(h))  # builds both
    rng = np.random.default_rng(1)
    norm.set_weights([rng.uniform(0.5, 1.5, 3), rng.normal(0, 0.1, 3), rng.normal(0, 0.1, 3), rng.uniform(0.5, 1.5, 3)])
    conv.set_weights([rng.normal(size=(3, 3, 3, 4)), rng.normal(size=4)])
    expected = np.asarray(conv(norm(h, training=False)))
    folded = np.asarray(floor.folded_convolution(conv, norm)(h))
    assert folded.shape == (2, 4, 4, 4) and np.abs(folded - expected).max() < 1e-4 and expected.max() > 0


def test_medians_over_the_rounds_in_the_variants_order():
    assert floor.rows_of(MEDIANS) == [
        {"target": "effcaps-floor", "variant": "EffCapsNet().predict_on_batch", "ms": 13.5},
        {"target": "effcaps-floor", "variant": "the same network through one tf.function", "ms": 12.75},
        {"target": "effcaps-floor", "variant": "bn1-bn3 folded into the next convolution", "ms": 12.0},
        {"target": "effcaps-floor", "variant": "conv1-conv4 with their ReLU only", "ms": 10.5},
    ]


def test_the_run_file_renders_the_shares_of_the_first_row(tmp_path):
    args = floor.parser().parse_args(["--results", str(tmp_path), "--host-name", "test host", "--rounds", "3"])
    path = floor.write(args, SPAN, MEDIANS, 2.5e-7)
    name = os.path.basename(path)
    record = json.loads(open(path).read())
    report.validate_run(record, name)
    assert name.startswith("2026-12-05-1105-") and name.endswith("-eff-capsnet-inference-floor.json")
    assert (record["batch"], record["folded_max_abs_diff"]) == (64, 2.5e-7)
    assert "at b64" in record["measured"] and "3 interleaved rounds of 30 calls" in record["measured"]
    page = report.pages([dict(record, file=name)])["docs/benchmarks/peers.md"]
    assert (
        "EffCapsNet().predict_on_batch 13.5 ms (1.00); the same network through one tf.function 12.75 ms (0.94); "
        "bn1-bn3 folded into the next convolution 12.0 ms (0.89); conv1-conv4 with their ReLU only 10.5 ms (0.78)."
    ) in page
