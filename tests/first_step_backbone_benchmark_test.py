"""benchmarks/first_step_backbone.py: the backbone model is the application's layers up to the cut, and the report's table."""

from benchmarks import first_step_backbone as first_step
from benchmarks import report


def test_the_backbone_keeps_the_layers_up_to_the_cut_and_adds_a_pooled_head():
    whole, _ = first_step.build("FMCapsNet", "final_relu", 32, "whole")
    backbone, loss = first_step.build("FMCapsNet", "final_relu", 32, "backbone")
    names = [layer.name for layer in whole.layers]
    cut = names.index("final_relu")
    # The input, the backbone's layers through final_relu (an input layer's name counts up with each model built), then the head.
    assert [layer.name for layer in backbone.layers[1 : cut + 1]] == names[1 : cut + 1] and len(
        backbone.layers
    ) == cut + 3
    assert backbone.output_shape == (None, 10) and type(backbone.layers[-2]).__name__ == "GlobalAveragePooling2D"
    assert not any("caps" in layer.name for layer in backbone.layers) and any(
        "caps" in name for name in names[cut + 1 :]
    )
    assert loss.get_config()["from_logits"] is True


def test_the_report_table_lists_each_processs_first_step():
    row = {
        "target": "first-step-backbone",
        "application": "A",
        "model": "backbone",
        "cut": "final_relu",
        "input": "64x64x3",
        "batch": 16,
        "layers": 176,
        "first_step_s": [32.3, 34.3],
        "step_s": 1.2,
    }
    run = {
        "host": {"id": "h", "cpu": "c", "cores": 2, "name": "H"},
        "date": "2026-11-29",
        "time_utc": "08:00-09:00",
        "command": "python benchmarks/first_step_backbone.py",
        "measured": "m",
        "source": "s",
        "rows": [row],
        "file": "f.json",
    }
    assert (
        "| A | backbone | final_relu | 64x64x3 | 16 | 176 | 32.3 · 34.3 | 1.2 |"
        in report.pages([run])["docs/benchmarks/scaling.md"]
    )
