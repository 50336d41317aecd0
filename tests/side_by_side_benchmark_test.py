"""benchmarks/side_by_side.py: the harness's results.jsonl as a run file, checked against medians worked out by
hand, and the report's tables and targets read from it."""

import json

import pytest

from benchmarks import report, side_by_side
from benchmarks.reporting import registry, verdicts


def line(pair, label, side, round_, median_ms=None, rss=None, error=None, tag="run"):
    return {
        "pair": pair,
        "label": label,
        "side": side,
        "round": round_,
        "median_ms": median_ms,
        "peak_rss_mb": rss,
        "error": error,
        "tag": tag,
    }


LINES = [
    line("effcaps", "train_b16", "peer", 1, 100.0, 800),
    line("effcaps", "train_b16", "lib", 1, 40.0, 700),
    line("effcaps", "train_b16", "peer", 2, 110.0, 820),
    line("effcaps", "train_b16", "lib", 2, 50.0, 690),
    line("effcaps", "infer_b64_pob", "peer", 1, error="rc=124 timeout 590 s"),
    line("effcaps", "infer_b64_pob", "peer", 2, 30.0, 650),
    *(line("effcaps", "infer_b64_pob", "lib", r, ms, 600) for r, ms in ((1, 20.0), (2, 24.0), (3, 22.0))),
    line("rem", "train_b128", "peer", 1, 3000.0, 2300),
    line("rem", "train_b128", "lib", 1, 1500.0, 1500),
    line("rem", "train_b128", "peer", 2, 3400.0, 2290),
    line("rem", "train_b128", "lib", 2, 1300.0, 1450),
    line("rem", "train_b128_remrouter", "lib", 1, 1200.0, 1400),
    line("rem", "train_b128_remrouter", "lib", 2, 1250.0, 1410),
    line("rem", "convonly_b128", "peer", 1, 1000.0, 900),
    line("rem", "convonly_b128", "lib", 1, 900.0, 950),
    line("fm", "light_FM_pob", "peer", 1, 70.0),
    line("fm", "light_FM_pob", "lib", 1, 30.0),
    line("fm", "light_DR3_pob", "peer", 1, 90.0),
    line("fm", "light_DR3_pob", "lib", 1, 40.0),
    line("fm", "light_FM_bn_pob", "lib", 1, 33.0),
    line("idpa_simple", "simple_r1_b32", "peer", 1, 4000.0, 2400),
    line("idpa_simple", "simple_r1_b32", "lib", 1, 300.0, 950),
    line("idpa_b128", "simple_r3_b128", "peer", 1, error="rc=137 killed (SIGKILL: OOM killer or timeout -k)"),
    line("idpa_b128", "simple_r3_b128", "lib", 1, 14000.0, 3100),
    line("fm_resnet", "resnet_FM_pob", "lib", 1, 50.0),  # a pair without a table: left out
    line("effcaps", "train_b64", "lib", 1, 99.0, tag="other"),  # another TAG: left out under --tag run
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("side_by_side")
    results = folder / "results.jsonl"
    results.write_text("\n".join(json.dumps(entry) for entry in LINES) + "\n")
    path = side_by_side.main(
        [
            str(results),
            "--software",
            "both sides' software",
            "--measured",
            "hand-made lines",
            "--tag",
            "run",
            "--started",
            "2026-12-04 10:00",
            "--ended",
            "2026-12-04 11:30",
            "--results",
            str(folder / "runs"),
            "--host-name",
            "test host",
        ]
    )
    record = json.loads(open(path).read())
    report.validate_run(record, path.rsplit("/", 1)[1])
    return dict(record, file=path.rsplit("/", 1)[1])


def rows(run, target):
    return [r for r in run["rows"] if r["target"] == target]


def test_medians_over_rounds_and_the_largest_peak(run):
    assert run["time_utc"] == "10:00-11:30" and run["software"] == "both sides' software"
    assert rows(run, "effcaps-train") == [
        dict(
            target="effcaps-train",
            configuration="fit step b16",
            peer_ms=105.0,
            ours_ms=45.0,
            peer_rss_mb=820,
            ours_rss_mb=700,
        )
    ]
    # The peer's failed round is left out; ours has three rounds.
    (infer,) = rows(run, "effcaps-infer")
    assert (infer["configuration"], infer["peer_ms"], infer["ours_ms"]) == ("inference b64, predict_on_batch", 30, 22)


def test_rem_rows_share_rems_step(run):
    ours, rem_router = rows(run, "dr-rem")
    assert (ours["peer_ms"], ours["ours_ms"], ours["peer_rss_mb"]) == (3200.0, 1400.0, 2300)
    assert rem_router["configuration"].startswith("the same with REM's router")
    assert (rem_router["peer_ms"], rem_router["ours_ms"], rem_router["peer_rss_mb"]) == (3200.0, 1225.0, 2300)
    (floor,) = rows(run, "dr-rem-floor")
    assert floor == dict(
        target="dr-rem-floor",
        configuration="two convolutions only, b128",
        peer_ms=1000.0,
        ours_ms=900.0,
        peer_step_ms=3200.0,
        ours_step_ms=1400.0,
    )


def test_fm_and_idpa_rows(run):
    assert rows(run, "seed003") == [
        dict(
            target="seed003",
            call="predict_on_batch",
            peer_fm_ms=70.0,
            ours_fm_ms=30.0,
            peer_dr3_ms=90.0,
            ours_dr3_ms=40.0,
            ours_fm_bn_ms=33.0,
        )
    ]
    (train,) = rows(run, "idpa-train")
    assert (train["configuration"], train["iterations"], train["peer_ms"], train["ours_ms"]) == (
        "simple",
        1,
        4000.0,
        300.0,
    )
    (b128,) = rows(run, "idpa-b128")
    assert b128["peer"].startswith("no step: rc=137 killed") and (b128["ours_ms"], b128["ours_rss_gb"]) == (14000, 3.1)
    assert {r["target"] for r in run["rows"]} <= {t for spec in registry.TABLES.values() for t in spec["rows"]}


def test_the_targets_read_the_converted_rows(run):
    def verdict(prefix):
        spec = next(v for v in registry.VERDICTS if v["target"].startswith(prefix))
        ((host, results, _),) = verdicts.verdict_rows(spec, [run])
        return host, results

    # 1400 / 3200 = 0.44 and 1225 / 3200 = 0.38, both within 0.5.
    assert verdict("DR-CapsNet") == ("test host", [("", "0.44, REM's router 0.38", True)])
    # DR(3) / FM, ours: 40 / 30 = 1.33 >= 1.26.
    assert verdict("FM-agreement network") == ("test host", [("", "1.33", True)])
    page = report.pages([run])["docs/benchmarks/peers.md"]
    assert "| fit step b16 | 105.0 | 45.0 | 0.43 | 820 / 700 |" in page


def test_bad_input_names_the_workload_and_the_line(tmp_path):
    bad = tmp_path / "results.jsonl"
    bad.write_text(json.dumps(line("rem", "train_b128", "peer", 1, 1.0)) + "\nnot json\n")
    with pytest.raises(ValueError, match="side_by_side: .* line 2 is not JSON"):
        side_by_side.read_results(bad)
    bad.write_text(json.dumps(line("rem", "train_b128", "ours", 1, 1.0)) + "\n")
    with pytest.raises(ValueError, match="'side' must be 'peer' or 'lib', got 'ours'"):
        side_by_side.read_results(bad)
    with pytest.raises(SystemExit):
        side_by_side.main([str(bad), "--software", "s", "--measured", "m", "--pairs", "rem,nope"])


def ab_line(round_, tree, name, batch, median_ms, error=None):
    job = {"name": name, "side": "lib", "batch": batch, "median_ms": median_ms, "error": error}
    return json.dumps({"round": round_, "tree": tree, "loadavg": "0.1 0.1 0.1", "job": job})


def test_before_after_rows_of_two_trees(tmp_path):
    lines = [
        ab_line(1, "/t/old", "effcaps_train", 16, 48.9),
        ab_line(1, "/t/new", "effcaps_train", 16, 55.1),
        ab_line(2, "/t/old", "effcaps_train", 16, 44.6),
        ab_line(2, "/t/new", "effcaps_train", 16, 42.3),
        ab_line(1, "/t/old", "idpa_simple_r3", 32, 1248.0),
        ab_line(1, "/t/new", "idpa_simple_r3", 32, None, error="killed"),  # no step: left out
        ab_line(1, "/t/old", "fm_light_DR3_pob", 128, 36.0),
        ab_line(1, "/t/new", "fm_light_DR3_pob", 128, 35.0),
    ]
    path = tmp_path / "ab.jsonl"
    path.write_text("\n".join(lines) + "\n")
    rows = side_by_side.before_after_rows(path, "/t/old", "/t/new")
    assert rows == [
        dict(
            target="peer-pairs-before-after",
            pair="effcaps",
            configuration="Efficient-CapsNet + decoder, fit step b16",
            before_ms=46.8,  # median of 48.9 and 44.6
            after_ms=48.7,  # median of 55.1 and 42.3
            before_each_ms=[48.9, 44.6],
            after_each_ms=[55.1, 42.3],
        ),
        dict(
            target="peer-pairs-before-after",
            pair="idpa_simple",
            configuration="InvertedAttentionCapsNet simple, training step b32, 3 iterations",
            before_ms=1248.0,
            after_ms=None,
            before_each_ms=[1248.0],
            after_each_ms=[],
        ),
        dict(
            target="peer-pairs-before-after",
            pair="fm",
            configuration="FM-agreement network (Zhao, Wang & Huang), DR(3), inference b128",
            before_ms=36.0,
            after_ms=35.0,
            before_each_ms=[36.0],
            after_each_ms=[35.0],
        ),
    ]
    written = side_by_side.main(
        ["--before-after", str(path), "--before", "/t/old", "--after", "/t/new", "--software", "s", "--measured", "m"]
        + ["--results", str(tmp_path / "runs"), "--host-name", "test host"]
    )
    record = json.loads(open(written).read())
    name = written.rsplit("/", 1)[1]
    report.validate_run(record, name)
    assert record["trees"] == {"before": "/t/old", "after": "/t/new"}
    page = report.pages([dict(record, file=name)])["docs/benchmarks/peers.md"]
    assert (
        "| effcaps | Efficient-CapsNet + decoder, fit step b16 | 46.8 | 48.7 | 1.04 | 48.9/44.6 · 55.1/42.3 |" in page
    )


def test_before_after_refuses_an_unknown_tree_or_job(tmp_path):
    path = tmp_path / "ab.jsonl"
    path.write_text(ab_line(1, "/t/other", "effcaps_train", 16, 40.0) + "\n")
    with pytest.raises(ValueError, match="tree '/t/other' is neither --before '/t/old' nor --after '/t/new'"):
        side_by_side.before_after_rows(path, "/t/old", "/t/new")
    path.write_text(ab_line(1, "/t/old", "glom_step", 8, 40.0) + "\n")
    with pytest.raises(ValueError, match="no configuration for the harness job 'glom_step'"):
        side_by_side.before_after_rows(path, "/t/old", "/t/new")
    with pytest.raises(SystemExit):  # --before-after without the trees
        side_by_side.main(["--before-after", str(path), "--software", "s", "--measured", "m"])
