"""The training-cost estimate of the CNN baselines, made from the rate at which two presets trained."""

from figures import records
from figures.numbers import hours
from keras_capsules import markdown

#: Multiply-adds of one forward pass per image (counted from the graphs: the stems' convolutions and dense layers).
MACS = {
    "EffCapsNet/mnist": 31.5e6,
    "CapsNet/mnist": 203e6,
    "matched": 30.1e6,
    "matched_40": 76.7e6,
    "capsnet_paper": 1965e6,
}
EPOCH_IMAGES = 55000  # an MNIST epoch under the validation protocol: 60,000 minus the 5,000-image hold-out


#: The training runs the estimate was made from, as their preset records stood then (registry.json before the
#: clean reruns of 2026-11-28): a rerun on a slower or shared machine must not move an estimate made before
#: the CNN was trained.
ESTIMATE_BASIS = {
    "EffCapsNet/mnist": {
        "train_seconds": 6980.0,
        "epochs": 45,
        "images": 60000,
        "hardware": "AMD EPYC, 2 CPU cores, no GPU",
    },
    "CapsNet/mnist": {
        "train_seconds": 11807.0,
        "epochs": 24,
        "images": 60000,
        "hardware": "AMD EPYC, 2 CPU cores, no GPU",
    },
}


def _rate(model, name):
    """Multiply-adds per second a preset's training reached (:data:`ESTIMATE_BASIS`): 3 forward passes per image and step."""
    run = ESTIMATE_BASIS[f"{model}/{name}"]
    return 3 * MACS[f"{model}/{name}"] * run["images"] * run["epochs"] / run["train_seconds"]


def _estimate(macs):
    """``(low, high)`` seconds per epoch of ``macs`` per image at the two presets' rates."""
    rates = sorted((_rate("EffCapsNet", "mnist"), _rate("CapsNet", "mnist")))
    return tuple(3 * macs * EPOCH_IMAGES / rate for rate in reversed(rates))


def baseline_cnn_cost():
    cnn, eff, capsnet = (
        records.preset("BaselineCNN", "mnist"),
        ESTIMATE_BASIS["EffCapsNet/mnist"],
        ESTIMATE_BASIS["CapsNet/mnist"],
    )
    expanded = records.affnist_records()["BaselineCNN"]
    eff_rate = _rate("EffCapsNet", "mnist")
    matched = 3 * MACS["matched"] * EPOCH_IMAGES / eff_rate
    low_40, high_40 = _estimate(MACS["matched_40"])
    low_paper, high_paper = _estimate(MACS["capsnet_paper"])
    per_epoch = expanded["train_seconds"] / expanded["epochs_completed"]
    headers = ["", "MACs per image", "per epoch (estimate)", "recipe's budget (estimate)"]
    rows = [
        [
            "`matched`, MNIST 28×28",
            "30.1M: conv 0.46M + 8.92M + 14.75M + 5.97M, dense 0.03M",
            f"about {matched:.0f} s (EffCapsNet's rate)",
            f"45 epochs: **about {hours(45 * matched)}**",
        ],
        [
            "`matched`, `expanded_mnist` 40×40",
            "76.7M: conv 1.04M + 21.31M + 37.75M + 16.59M, dense 0.03M",
            f"{low_40:.0f}–{high_40:.0f} s (measured: {per_epoch:.0f} s)",
            f"50 epochs: **{50 * low_40 / 3600:.1f}–{hours(50 * high_40)}** "
            f"({expanded['epochs_completed']}-epoch run: {expanded['train_seconds'] / 60:.0f} min)",
        ],
        [
            "`capsnet_paper`, MNIST 28×28",
            "1,965M: conv 5.0M + 1,284.5M + 642.3M, dense 33.0M",
            f"{low_paper / 3600:.1f}–{hours(high_paper)}",
            f"50 epochs: **{50 * low_paper / 3600:.0f}–{50 * high_paper / 3600:.0f} h**",
        ],
    ]
    return (
        f"The matched CNN on MNIST has been trained (the `mnist` preset below): its {cnn['epochs']} epochs took "
        f"{cnn['train_seconds']:,.0f} s of\ntraining ({cnn['hardware']}; shared with other work for part of the run, its "
        f"training log has the epochs' times), against the {hours(matched * cnn['epochs'])} estimated here. The `capsnet_paper` "
        "variant has not been\ntrained: its estimate does not fit the budget. The estimate counts the multiply-adds (MACs) of one\n"
        "forward pass per image, takes a training step as three forward passes, and uses the rate at which\n"
        f"two of this library's presets had trained when it was made (their files of 2026-11-24, before the clean reruns; {eff['hardware']}): EffCapsNet mnist ({MACS['EffCapsNet/mnist'] / 1e6:.1f}M MACs per image\n"
        f"with its decoder, {eff['train_seconds']:,.0f} s for {eff['epochs']} epochs: about {eff_rate / 1e9:.0f} GMAC/s) and CapsNet mnist "
        f"({MACS['CapsNet/mnist'] / 1e6:.0f}M MACs, {capsnet['train_seconds']:,.0f} s for\n{capsnet['epochs']} epochs: about "
        f"{_rate('CapsNet', 'mnist') / 1e9:.0f} GMAC/s). An epoch is {EPOCH_IMAGES:,} images (60,000 minus the 5,000-image validation\n"
        "hold-out).\n\n" + "\n".join(markdown.table(headers, rows, align="lrrr")) + "\n\n"
        "The matched CNN costs what Efficient-CapsNet costs: the stem is 30.1M of Efficient-CapsNet's 31.5M\n"
        "MACs (`BENCHMARKS.md` times a CNN on the same stem against Efficient-CapsNet's training step). The CapsNet\n"
        f"paper's baseline costs {MACS['capsnet_paper'] / MACS['matched']:.0f} times the matched CNN per image: its 5×5 convolutions\n"
        "with 256 channels at full 28×28 resolution (no pooling) are 98 % of the work. Even the "
        f"{capsnet['epochs']} epochs of\nthe CapsNet preset would take {capsnet['epochs'] * low_paper / 3600:.0f}–"
        f"{capsnet['epochs'] * high_paper / 3600:.0f} hours on two cores, so it does not fit a one-day CPU budget;\nit needs a GPU."
    )


def capsnet_paper_baseline():
    low, high = _estimate(MACS["capsnet_paper"])
    return (
        'The CapsNet paper\'s own baseline CNN (`BaselineCNN(variant="capsnet_paper")`, 35.4M parameters) is not in\n'
        f"the comparison: its recipe's 50 epochs are estimated at {50 * low / 3600:.0f}–{50 * high / 3600:.0f} hours on two CPU cores "
        f"({MACS['capsnet_paper'] / MACS['matched']:.0f} times the\nmatched CNN's work per image; "
        "[BaselineCNN](applications/baseline_cnn.md#training-cost-estimated-then-measured-for-the-matched-cnn-on-mnist)),\n"
        "beyond the one-day budget; it needs a GPU."
    )
