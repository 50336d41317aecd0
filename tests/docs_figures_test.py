"""The measured figures of the user pages agree with their committed run records (tools/docs_figures.py)."""

import copy
import json
import math
import shutil

import pytest
from repo_scripts import ROOT, load_script

docs_figures = load_script("tools/docs_figures.py")
# Loading the script imported its modules (tools/figures/), as running it does.
from figures import fine_tune, larger_inputs, records, robustness, why_slow  # noqa: E402
from figures.numbers import StaleSentence  # noqa: E402

from keras_capsules import markdown  # noqa: E402

main_job = load_script("tools/results/main_job.py")
RERUN = "run python tools/docs_figures.py to rewrite them from the records"


def _read(relative):
    return (ROOT / relative).read_text(encoding="utf-8")


def _block(text, name):
    start, end = markdown.markers(f"figures:{name}")
    return text.split(start, 1)[1].split(end, 1)[0]


def test_every_page_agrees_with_its_records():
    assert docs_figures.main(check_only=True) == [], f"pages differ from their records: {RERUN}"


def test_main_job_figures_are_the_records_values():
    paths = sorted((ROOT / "docs" / "results" / "main-job").glob("*.json"))
    record = json.loads(paths[-1].read_text())
    accuracy = f"{100 * record['test_accuracy']:.2f} %"  # e.g. 0.991 -> "99.10 %"
    for page, name in [
        ("README.md", "main-job-readme"),
        ("docs/results.md", "main-job-results"),
        ("docs/getting-started.md", "main-job-getting-started"),
        ("docs/applications/eff_capsnet.md", "main-job-eff-capsnet"),
        ("docs/applications/index.md", "main-job-applications"),
    ]:
        block = _block(_read(page), name)
        assert accuracy in block and paths[-1].name in block, (page, name)
    for page in ("README.md", "docs/results.md", "docs/getting-started.md"):  # the time, where the page quotes one
        assert f"{record['train_seconds']:.0f} s" in _read(page)


def test_robustness_and_affnist_figures_are_the_records_values():
    results = ROOT / "docs" / "results"
    effcapsnet = json.loads((results / "robustness-mnist" / "effcapsnet-mnist.json").read_text())
    rotation_45 = dict(effcapsnet["table"]["rotation"])[45.0]
    table = _block(_read("docs/results.md"), "robustness-table")
    row = next(line for line in table.splitlines() if line.startswith("| rotation | 45 degrees |"))
    assert row.split("|")[5].strip() == f"{100 * rotation_45:.1f}"  # the EffCapsNet/mnist column
    fm = json.loads((results / "affnist-style" / "fmcapsnet-expanded_mnist.json").read_text())
    cnn = json.loads((results / "affnist-style" / "baselinecnn-expanded_mnist.json").read_text())
    fm_affine, cnn_affine = (r["evaluations"]["affine_mnist:test"]["accuracy"] for r in (fm, cnn))
    readme = _block(_read("README.md"), "robustness-readme")
    assert f"FMCapsNet scores {100 * fm_affine:.2f} %" in readme and f"matched CNN {100 * cnn_affine:.2f} %" in readme
    findings = _block(_read("docs/results.md"), "affnist-findings")
    assert f"a difference of {round(10000 * (cnn_affine - fm_affine))} images" in findings
    p = (fm_affine + cnn_affine) / 2
    assert f"about {100 * math.sqrt(p * (1 - p) / 10000):.2f} points" in findings  # one accuracy's standard error


def test_training_cost_estimate_keeps_the_runs_it_was_made_from():
    registry = {
        (r["model"], r["name"]): r
        for r in json.loads((ROOT / "keras_capsules" / "presets" / "registry.json").read_text())
    }
    # Made from EffCapsNet mnist's file of 2026-11-24 (6,980 s for 45 epochs of 60,000 images, 31.5M MACs
    # per image, 3 passes per step): its clean rerun on a slower, shared machine does not move it.
    rate = 3 * 31.5e6 * 60000 * 45 / 6980
    epoch = 3 * 30.1e6 * 55000 / rate  # the matched CNN's epoch of 55,000 images at that rate
    block = _block(_read("docs/applications/baseline_cnn.md"), "baseline-cnn-cost")
    assert f"about {epoch:.0f} s (EffCapsNet's rate)" in block and f"about {rate / 1e9:.0f} GMAC/s" in block
    assert (
        f"{registry[('BaselineCNN', 'mnist')]['train_seconds']:,.0f} s" in block
    )  # the CNN's measured time: the registry's


def test_a_figure_typed_over_a_block_is_reported(tmp_path):
    for page in docs_figures.PAGES:
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / page, tmp_path / page)
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    block = _block(readme, "robustness-readme")
    (tmp_path / "README.md").write_text(
        readme.replace(block, block.replace("FMCapsNet scores", "FMCapsNet scores about")), encoding="utf-8"
    )
    stale = [page for page, (text, new) in docs_figures.generate(tmp_path).items() if text != new]
    assert stale == ["README.md"]


def test_a_page_without_its_markers_is_named(tmp_path):
    for page in docs_figures.PAGES:
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / page, tmp_path / page)
    start, end = markdown.markers("figures:rem-preset")
    rem = (tmp_path / "docs" / "rem.md").read_text(encoding="utf-8")
    (tmp_path / "docs" / "rem.md").write_text(rem.replace(start, "").replace(end, ""), encoding="utf-8")
    with pytest.raises(
        ValueError,
        match=r"^docs/rem\.md must hold <!-- figures:rem-preset:start --> \.\.\. <!-- figures:rem-preset:end --> once each",
    ):
        docs_figures.generate(tmp_path)


def test_a_record_that_no_longer_supports_a_sentence_stops_the_generator(monkeypatch):
    flipped = copy.deepcopy(records.robustness_records())
    cnn = dict(flipped["BaselineCNN/mnist"]["table"]["rotation"])
    capsules = dict(flipped["EffCapsNet/mnist"]["table"]["rotation"])
    cnn[15.0] = capsules[15.0] + 0.01  # the CNN now ahead at 15 degrees
    flipped["BaselineCNN/mnist"]["table"]["rotation"] = [[m, a] for m, a in cnn.items()]
    monkeypatch.setattr(records, "robustness_records", lambda: flipped)
    with pytest.raises(StaleSentence, match="the capsule network is ahead under rotation"):
        robustness.robustness_findings()


def test_main_job_record_keeps_the_runs_figures():
    metrics = {
        "dataset": "mnist_sample",
        "epochs_completed": 3,
        "steps_per_epoch": 450,
        "recipe": {"batch_size": 16},
        "validation": {"examples": 800, "training_examples": 7200},
        "parameters": 1573744,
        "history": {"val_accuracy": [0.95249998, 0.97124999, 0.97875001]},
        "test_accuracy": 0.9909999966,
        "train_seconds": 95.134,
    }
    import datetime

    now = datetime.datetime(2026, 11, 28, 8, 35, tzinfo=datetime.timezone.utc)
    record = main_job.record(metrics, "ab" * 20, 130.26, [8.12, 9.67], now)
    assert record["test_accuracy"] == 0.991 and record["train_seconds"] == 95.1 and record["command_seconds"] == 130.3
    assert record["validation_accuracy"] == [0.9525, 0.9712, 0.9788]
    assert (record["date"], record["time_utc"], record["commit"]) == ("2026-11-28", "08:35", "ab" * 20)
    assert record["host"]["load_average_1min"] == {"start": 8.12, "end": 9.67} and record["training_examples"] == 7200


def _fine_tune_folder_record():
    path = sorted((ROOT / "benchmarks" / "results").glob("*-fine-tune-folder.json"))[-1]
    return json.loads(path.read_text()), path.name


def test_fine_tune_folder_figures_are_the_records_values():
    record, name = _fine_tune_folder_record()
    block = _block(_read("docs/own-images.md"), "fine-tune-folder")
    assert f"`benchmarks/results/{name}`" in block
    for row in record["rows"]:
        curve = ", ".join(f"{100 * value:.1f}" for value in row["validation_accuracy"])  # 0.7533 -> "75.3"
        assert f"| {curve} | {100 * row['test_accuracy']:.1f} | {row['train_seconds']:.0f} s |" in block
    tests = [row["test_accuracy"] for row in record["rows"]]
    p = sum(tests) / len(tests)
    images = record["rows"][0]["test_examples"]
    assert f"{images:,} test images (about {100 * math.sqrt(p * (1 - p) / images):.1f} points)" in block
    assert f"within {100 * (max(tests) - min(tests)):.1f} points of each other" in block


def test_a_fine_tune_record_where_scratch_starts_ahead_stops_the_generator(monkeypatch):
    record, name = _fine_tune_folder_record()
    flipped = copy.deepcopy(record)
    for row in flipped["rows"]:
        if row["run"] == "from scratch":
            row["validation_accuracy"][0] = 0.99  # ahead of both fine-tuned runs after the first epoch
    monkeypatch.setattr(records, "fine_tune_folder_record", lambda: (flipped, name))
    with pytest.raises(StaleSentence, match="fine-tuning starts ahead"):
        fine_tune.fine_tune_folder()


def _scale_row(application, size, status="measured", **figures_):
    return dict(target="scale", application=application, size=size, batch=16, status=status, **figures_)


def test_larger_inputs_table_divides_each_step_by_the_cnns_at_the_same_input(monkeypatch):
    record = {
        "host": {"name": "Test CPU, 2 vCPUs"},
        "date": "2026-11-28",
        "time_utc": "17:20-18:40",
        "package": {"path": "/x", "commit": "1234567890abcdef"},
        "rows": [
            _scale_row("BaselineCNN", 32, step_ms=100.0, train_peak_mb=900),
            _scale_row("MatrixCapsNet", 32, step_ms=1500.0, train_peak_mb=3189),
            _scale_row("EffConvCapsNet", 32, status="refused", why="needs 33x33"),
            _scale_row("BaselineCNN", 64, step_ms=250.0, train_peak_mb=1000),
            _scale_row("MatrixCapsNet", 64, step_ms=3000.0, train_peak_mb=4406),
            _scale_row("EffConvCapsNet", 64, step_ms=500.0, train_peak_mb=1200),
        ],
    }
    monkeypatch.setattr(records, "scale_record", lambda: (record, "2026-11-28-1720-test-scale.json"))
    monkeypatch.setattr(records, "supplement_record", lambda: None)
    block = larger_inputs.larger_inputs()
    assert "| application | 32×32×3 | 64×64×3 |" in block
    # 1500 / 100 = 15.0 and 3000 / 250 = 12.0 times the CNN's step; 3,189 MB -> 3.2 GB
    assert "| MatrixCapsNet | 3.2 GB · 15.0× the CNN's step | 4.4 GB · 12.0× the CNN's step |" in block
    assert "| EffConvCapsNet | does not build | 1.2 GB · 2.0× the CNN's step |" in block
    assert "| BaselineCNN | 0.9 GB · 0.1 s a step | 1.0 GB · 0.25 s a step |" in block
    assert "At 32×32×3, 2 of the 2 that build trained a step; the most memory, MatrixCapsNet's, was 3.2 GB" in block
    assert "At 64×64×3, 3 of the 3 that build trained a step" in block
    assert "Within 3× the CNN's step: EffConvCapsNet; more than 10×: MatrixCapsNet." in block
    assert (
        "Test CPU, 2 vCPUs, 17:20-18:40 UTC, the package at `1234567`" in block
        and "`benchmarks/results/2026-11-28-1720-test-scale.json`" in block
    )


def test_larger_inputs_names_a_configuration_that_was_stopped(monkeypatch):
    record = {
        "host": {"name": "Test CPU"},
        "date": "2026-11-28",
        "time_utc": "17:20-18:40",
        "package": {"commit": "abcdef0"},
        "rows": [
            _scale_row("BaselineCNN", 128, step_ms=800.0, train_peak_mb=1500),
            _scale_row(
                "MatrixCapsNet", 128, status="skipped", why="over 20 GB during the first step; stopped by the guard"
            ),
        ],
    }
    monkeypatch.setattr(records, "scale_record", lambda: (record, "r-scale.json"))
    monkeypatch.setattr(records, "supplement_record", lambda: None)
    block = larger_inputs.larger_inputs()
    assert "| MatrixCapsNet | not trained: over 20 GB during the first step; stopped by the guard |" in block
    assert (
        "1 of the 2 that build trained a step" in block and "not trained: MatrixCapsNet (the table says why)" in block
    )


def test_a_later_run_at_224_px_only_is_a_supplement_below_the_sweep(monkeypatch, tmp_path):
    def run(host, sizes):
        rows = [_scale_row("BaselineCNN", s, step_ms=100.0 * s, train_peak_mb=10 * s) for s in sizes]
        rows += [_scale_row("CapsNet", s, step_ms=500.0 * s, train_peak_mb=20 * s) for s in sizes]
        return {"host": {"name": host}, "time_utc": "01:00-02:00", "package": {"commit": "abcdef0"}, "rows": rows}

    for name, record in (
        ("2026-11-29-0526-a-scale.json", run("Sweep CPU", (32, 64))),
        ("2026-12-01-2100-b-scale.json", run("Other CPU", (224,))),
        ("2026-11-28-1716-a-scale-before.json", run("Sweep CPU", (32,))),
    ):
        (tmp_path / name).write_text(json.dumps(record))
    monkeypatch.setattr(records, "BENCHMARK_RESULTS", str(tmp_path))
    assert records.scale_record()[1] == "2026-11-29-0526-a-scale.json"  # the newer file holds no size of the sweep
    assert records.supplement_record()[1] == "2026-12-01-2100-b-scale.json"
    block = larger_inputs.larger_inputs()
    assert "| application | 32×32×3 | 64×64×3 |" in block and "on Sweep CPU, 01:00-02:00 UTC" in block
    head, tail = block.split("At 224×224×3, measured in a run of its own on Other CPU")
    assert "224" not in head and "`benchmarks/results/2026-12-01-2100-b-scale.json`" in tail
    # 500 x 224 / (100 x 224) = 5.0 times that run's CNN; 20 x 224 = 4,480 MB
    assert "| CapsNet | 4.5 GB · 5.0× the CNN's step |" in tail
    assert "- At 224×224×3, 2 of the 2 that build trained a step; the most memory, CapsNet's, was 4.5 GB." in tail


def _cost_row(application, gflop, transcendental, written, per_byte, top=("Mul", 2000.0)):
    return dict(
        target="step-cost",
        application=application,
        input="64x64x3",
        batch=16,
        gflop_per_image=gflop,
        m_transcendental_per_image=transcendental,
        m_written_per_image=written,
        flops_per_byte=per_byte,
        op_types=[{"op_type": top[0], "mflop_per_image": top[1]}],
    )


def _first_step_row(application, first_step_s, step_s):
    return dict(
        target="first-step",
        application=application,
        input="64x64x3",
        batch=16,
        status="measured",
        after_first_step_s=[first_step_s],
        after_step_s=step_s,
    )


def test_why_slow_sets_the_counts_against_the_cnn_and_the_dynamic_router(monkeypatch):
    counts = {
        "rows": [
            _cost_row("BaselineCNN", 1.5, 0.0, 10.0, 35.0, ("Conv2D", 480.0)),
            _cost_row("ConsensusCapsNet-dynamic", 0.9, 2.0, 180.0, 1.2),
            _cost_row("ConsensusCapsNet", 5.0, 800.0, 4000.0, 0.32, ("Mul", 2200.0)),
            _cost_row("MatrixCapsNet", 12.0, 42.0, 4250.0, 0.7, ("BatchMatMulV2", 9000.0)),
        ]
    }
    scale = {
        "host": {"name": "Test CPU"},
        "rows": [
            _scale_row("BaselineCNN", 64, step_ms=400.0, train_peak_mb=1000, gflops=60.0),
            _scale_row("MatrixCapsNet", 64, step_ms=130000.0, train_peak_mb=4000, gflops=1.5),
        ],
    }
    scale["rows"].append(_scale_row("ConsensusCapsNet-dynamic", 64, step_ms=4600.0, train_peak_mb=1500, gflops=3.0))
    first = {
        "host": {"name": "Other CPU"},
        "rows": [
            _first_step_row("BaselineCNN", 1.1, 0.2),
            _first_step_row("MatrixCapsNet", 41.0, 27.0),
            _first_step_row("ConsensusCapsNet", 36.0, 22.0),
            _first_step_row("FMCapsNet", 12.0, 0.5),
        ],
    }
    monkeypatch.setattr(records, "step_cost_record", lambda: (counts, "c-step-cost.json"))
    monkeypatch.setattr(records, "scale_record", lambda: (scale, "s-scale.json"))
    monkeypatch.setattr(records, "first_step_record", lambda: (first, "f-first-step.json"))
    block = why_slow.why_slow()
    # 180 / 10 = 18 times the CNN's values; 4,600 / 400 ms = 11.5 times its step
    assert (
        "- `ConsensusCapsNet-dynamic`: 0.9 GFLOP per image, fewer than the CNN's 1.5, but 180 M float32 values written "
        "per image, 18× the CNN's 10.0 M (1.20 flops per byte written): its step is bound by memory traffic, not by "
        "arithmetic; on Test CPU its step was 11.5× the CNN's."
    ) in block
    # over 30 s: MatrixCapsNet 41 - 27 = 14 s, ConsensusCapsNet 36 - 22 = 14 s; FMCapsNet's 12 s is within it
    assert (
        "on Other CPU (`benchmarks/results/f-first-step.json`): `MatrixCapsNet` 41.0 s, of which a step takes 27.0 s "
        "(tracing and the rest 14.0 s); `ConsensusCapsNet` 36.0 s, of which a step takes 22.0 s (tracing and the rest "
        "14.0 s). Less its step, each is within 30 s"
    ) in block and "FMCapsNet" not in block
    first["rows"][1].update(after_first_step_s=[65.0], after_step_s=34.0)  # 65 - 34 = 31 s besides the step
    assert (
        "Less its step, `MatrixCapsNet` still passes 30 s: tracing and compiling alone take longer than the limit."
        in why_slow.why_slow()
    )
    first["rows"][1].update(after_first_step_s=[41.0], after_step_s=27.0)
    # 4,250 M values x 4 bytes x 16 images = 272 GB; 9,000 of 12,000 MFLOP = 75 %
    assert (
        "- `MatrixCapsNet`: 12 GFLOP per image, 4,250 M float32 values written per image (272 GB a step at batch 16), "
        "0.70 flops per byte written against 35.0 for the CNN's convolutions; 42.0 M transcendental evaluations "
        "(exp, cos, ...) per image; BatchMatMulV2 counts 75 % of its flops."
    ) in block
    # 800 / 2 = 400 times the dynamic router's; 2,200 of 5,000 MFLOP = 44 %
    assert (
        "800.0 M transcendental evaluations (exp, cos, ...) per image, 400× the 2.00 M of the same network with dynamic routing; Mul counts 44 %"
        in block
    )
    assert (
        "- On Test CPU (`benchmarks/results/s-scale.json`) their steps achieved `MatrixCapsNet` 1.5 GFLOP/s, the CNN's 60."
        in block
    )
    counts["rows"][2]["m_transcendental_per_image"] = (
        3.0  # no longer many times the dynamic router's: the sentence is refused
    )
    with pytest.raises(ValueError, match="outnumber"):
        why_slow.why_slow()


def test_adversarial_table_is_the_records_table():
    """docs/results.md's adversarial block is what tools/results/adversarial.py writes from its records."""
    adversarial = load_script("tools/results/adversarial.py")
    start, end = markdown.markers(adversarial.BLOCK)
    block = _read("docs/results.md").split(start, 1)[1].split(end, 1)[0]
    assert block == "\n" + adversarial.table() + "\n", "run python tools/results/adversarial.py --table"
    assert "| `EffCapsNet/mnist` |" in block  # one row a model, from the records
