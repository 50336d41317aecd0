"""The robustness comparison of the MNIST presets and the matched CNN under rotation, scale, shear and translation."""

from figures import records
from figures.affnist import affine
from figures.numbers import check, percent, points
from keras_capsules import markdown

MATCHED_CAPSULES, MATCHED_CNN = "EffCapsNet/mnist", "BaselineCNN/mnist"


def _curve(record, transform):
    """``{magnitude: accuracy}`` of one transform, without the untransformed point (0, or 1 for scale)."""
    return {magnitude: accuracy for magnitude, accuracy in record["table"][transform] if magnitude not in (0, 1)}


def _gaps(by_model, transform, first=MATCHED_CAPSULES, second=MATCHED_CNN):
    """``{magnitude: accuracy(first) - accuracy(second)}``."""
    a, b = _curve(by_model[first], transform), _curve(by_model[second], transform)
    return {magnitude: a[magnitude] - b[magnitude] for magnitude in a}


def _behind_from(by_model):
    """The smallest translation from which the capsule network stays behind the CNN."""
    gaps = _gaps(by_model, "translation")
    behind = [magnitude for magnitude in sorted(gaps) if all(gaps[m] < 0 for m in gaps if m >= magnitude)]
    check(
        behind and all(gaps[m] > 0 for m in gaps if m < behind[0]),
        "behind under translation from some distance on, ahead below it",
    )
    return behind[0]


def robustness_table():
    """The accuracy table: a row per transform and magnitude, a column per model (%)."""
    runs = list(records.robustness_records().values())
    rows = [["none", "", *(f"{100 * r['accuracy']:.2f}" for r in runs)]]
    for transform in runs[0]["table"]:
        unit = runs[0]["units"][transform]
        for magnitude in _curve(runs[0], transform):
            rows.append(
                [transform, f"{magnitude:g} {unit}", *(f"{100 * _curve(r, transform)[magnitude]:.1f}" for r in runs)]
            )
    headers = ["transform", "magnitude", *(f"`{r['model']}`" for r in runs)]
    return "\n".join(markdown.table(headers, rows, align="lr" + "r" * len(runs)))


def robustness_findings():
    by_model = records.robustness_records()
    capsules, cnn, rem, capsnet = (
        by_model[m] for m in (MATCHED_CAPSULES, MATCHED_CNN, "EffCapsNet/mnist_rem", "CapsNet/mnist")
    )
    ahead = {}
    for transform in ("rotation", "scale", "shear"):
        gaps = _gaps(by_model, transform)
        check(all(gap > 0 for gap in gaps.values()), f"the capsule network is ahead under {transform}")
        ahead[transform] = gaps
    scale_best = max(ahead["scale"], key=ahead["scale"].get)
    behind = _behind_from(by_model)
    translation = {
        m: (_curve(capsules, "translation")[m], _curve(cnn, "translation")[m]) for m in _curve(cnn, "translation")
    }
    far = [m for m in sorted(translation) if m > behind]
    rotation = {name: _curve(by_model[name], "rotation") for name in by_model}
    largest = max(rotation[MATCHED_CNN])
    check(
        all(0.4 <= rotation[name][largest] <= 0.6 for name in (MATCHED_CAPSULES, MATCHED_CNN)),
        "both lose about half their accuracy at the largest rotation",
    )
    check(
        all(
            rotation[MATCHED_CNN][m] > max(rotation["EffCapsNet/mnist_rem"][m], rotation["CapsNet/mnist"][m])
            for m in rotation[MATCHED_CNN]
        ),
        "the CNN trained with rotations is ahead of both capsule networks trained without them at every rotation",
    )
    two_largest = {t: sorted(_curve(capsnet, t))[-2:] for t in ("rotation", "translation")}
    check(
        all(
            _curve(capsnet, t)[m] < min(_curve(r, t)[m] for name, r in by_model.items() if name != "CapsNet/mnist")
            for t, ms in two_largest.items()
            for m in ms
        ),
        "CapsNet is the least accurate of the four at the two largest rotations and translations",
    )

    def span(gaps):
        return f"{points(min(gaps.values()))}–{points(max(gaps.values()))} points"

    def pair(m):
        return f"{100 * translation[m][0]:.1f} against {100 * translation[m][1]:.1f} % at {m:g} px"

    rem_45, eff_45 = (_curve(r, "rotation").get(45.0) for r in (rem, capsules))
    return (
        f"- **Matched pair** (same parameter count, augmentation, optimiser and budget: `{MATCHED_CAPSULES}` against\n"
        f"  `{MATCHED_CNN}`): the capsule network is ahead under rotation (by {span(ahead['rotation'])}), scaling "
        f"({span(ahead['scale'])}, the most at {scale_best:g}×) and shear ({span(ahead['shear'])}), and **behind under translation** "
        f"from {behind:g} pixels on (" + ", ".join(pair(m) for m in far) + "). Neither is robust to large rotations: "
        f"both keep about half their accuracy at {largest:g}° ({100 * rotation[MATCHED_CAPSULES][largest]:.1f} and "
        f"{100 * rotation[MATCHED_CNN][largest]:.1f} %).\n"
        "- **Training augmentation matters more than the architecture here.** The two Efficient-CapsNets share an\n"
        f"  architecture; the one trained with small rotations (`mnist`) keeps {100 * eff_45:.1f} % at 45° where the one trained\n"
        f"  with 2-pixel shifts only (`mnist_rem`) keeps {100 * rem_45:.1f} %. The CNN trained with rotations is ahead of both\n"
        "  capsule networks trained without them at every rotation.\n"
        "- `CapsNet` (42 times the parameters, 2-pixel shifts) is the least accurate of the four at the two largest\n"
        "  translations and rotations.\n"
        "- So, on this test, capsule networks are **not uniformly more robust** than a CNN of the same size: the\n"
        "  capsule model wins on rotation and scale by small margins and loses on translation by large ones."
    )


def robustness_readme():
    by_model, runs = records.robustness_records(), records.affnist_records()
    fm, cnn = runs["FMCapsNet"], runs["BaselineCNN"]
    gaps = {t: _gaps(by_model, t) for t in ("rotation", "scale")}
    check(
        all(gap > 0 for g in gaps.values() for gap in g.values()),
        "Efficient-CapsNet is ahead under rotation and scaling",
    )
    return (
        "Are capsule networks more robust to viewpoint change than a CNN of the same size? Measured here with\n"
        "the presets and a matched CNN (161,824 parameters, same training): not uniformly. Efficient-CapsNet is\n"
        f"ahead under rotation and scaling (by up to {points(max(gaps['rotation'].values()))} and "
        f"{points(max(gaps['scale'].values()))} points) and behind under translations of {_behind_from(by_model):g} pixels and more; trained\n"
        f"on translated digits and tested on a generated affNIST-style set, FMCapsNet scores {percent(affine(fm))} and the\n"
        f"matched CNN {percent(affine(cnn))}. Tables, figure and protocol: [docs/results.md](docs/results.md)."
    )
