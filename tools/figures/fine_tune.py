"""Fine-tuning a preset on a folder of images against training from scratch (``benchmarks/fine_tune_folder.py``)."""

from figures import records
from figures.numbers import check, points, standard_error
from keras_capsules import markdown


def fine_tune_folder():
    record, name = records.fine_tune_folder_record()
    runs = {row["run"]: row for row in record["rows"]}
    scratch, frozen, tuned = runs["from scratch"], runs["fine-tuned, frozen"], runs["fine-tuned"]
    folder, epochs = record["folder"], scratch["epochs"]
    check(
        all(row["epochs"] == epochs and row["seed"] == scratch["seed"] for row in runs.values()),
        "the three runs share their epochs and seed",
    )
    rows = []
    for label, row in (
        ("from scratch", scratch),
        ('fine-tuned from `weights="mnist"`', frozen),
        ('fine-tuned from `weights="mnist"`', tuned),
    ):
        frozen_for = (
            f"the first {row['freeze_backbone_epochs']} epochs"
            if row["freeze_backbone_epochs"]
            else "none"
            if row["weights"]
            else "—"
        )
        curve = ", ".join(f"{100 * value:.1f}" for value in row["validation_accuracy"])
        rows.append([label, frozen_for, curve, f"{100 * row['test_accuracy']:.1f}", f"{row['train_seconds']:.0f} s"])
    headers = [
        "run",
        "backbone frozen for",
        "validation accuracy after each epoch (%)",
        "test accuracy (%)",
        "training time",
    ]
    first = {key: row["validation_accuracy"][0] for key, row in runs.items()}
    last = {key: row["validation_accuracy"][-1] for key, row in runs.items()}
    check(
        first["fine-tuned"] > first["from scratch"] and first["fine-tuned, frozen"] > first["from scratch"],
        "fine-tuning starts ahead",
    )
    held_out_error = standard_error(sum(last.values()) / len(last), scratch["validation_examples"])
    check(
        all(0 < last[key] - last["from scratch"] < 2 * held_out_error for key in ("fine-tuned", "fine-tuned, frozen")),
        "the fine-tuned runs end ahead on the held-out images, by less than two standard errors",
    )
    tests = [row["test_accuracy"] for row in runs.values()]
    spread = max(tests) - min(tests)
    test_error = standard_error(sum(tests) / len(tests), scratch["test_examples"])
    check(
        spread < 2 * test_error, "the test accuracies after the last epoch are within two standard errors of each other"
    )
    host = record["host"]["name"].rsplit(" (", 1)[0]
    return "\n".join(
        [
            f"`benchmarks/fine_tune_folder.py` writes a folder of Fashion-MNIST images as PNG files,\n"
            f"{folder['train_per_class']} per class from its training split in {len(folder['classes'])} class folders "
            f"({scratch['training_examples']:,} for training, {scratch['validation_examples']} held out)\n"
            f"and a `test/` of {folder['test_per_class']} per class from its test split, and trains `EffCapsNet` on it three "
            f"times through\n`training.train` with its generic recipe, {epochs} epochs, seed {scratch['seed']} and the same "
            "hold-out: from scratch, and\nfine-tuned from the MNIST preset with and without a frozen first stage. The test "
            "split was evaluated\nonce, at the end of each run. Run record "
            f"`benchmarks/results/{name}`\n({record['date']}, {host}, shared with other work, so the times are only indicative):",
            "",
            *markdown.table(headers, rows, align="lllrr"),
            "",
            f"Fine-tuning starts ahead: after the first epoch {100 * first['fine-tuned']:.1f} % (nothing frozen) and "
            f"{100 * first['fine-tuned, frozen']:.1f} % (backbone\nfrozen) of the held-out images are right, against "
            f"{100 * first['from scratch']:.1f} % from scratch. After the last epoch the\nfine-tuned runs are still ahead on "
            f"the {scratch['validation_examples']} held-out images ({100 * last['fine-tuned, frozen']:.1f} and "
            f"{100 * last['fine-tuned']:.1f} against\n{100 * last['from scratch']:.1f} %), by less than two standard errors "
            f"of an accuracy on so few images (about {points(held_out_error)} points),\nand the three test accuracies lie within "
            f"{points(spread)} points of each other, less than two standard errors on\n{scratch['test_examples']:,} test images "
            f"(about {points(test_error)} points). On this folder the pretrained backbone gave a faster\nstart and no test "
            "accuracy this run can tell apart from training from scratch; one folder and one\nseed do not say more.",
        ]
    )
