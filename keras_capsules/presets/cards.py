"""Model cards: a preset's registry record rendered as Markdown (docs pages and ``keras-capsules presets``)."""

import os

from keras_capsules.presets import registry

#: License of every shipped preset file (the library's).
LICENSE = "Apache-2.0, like the library."


def _dataset_description(name):
    from keras_capsules import datasets

    return datasets.info(name).description


def _size(preset):
    path = os.path.join(registry.PACKAGE_DIR, preset.file)
    return f"{os.path.getsize(path) / 1e6:.1f} MB" if os.path.isfile(path) else "not in the package"


def _validation(preset):
    held_out = preset.validation
    if not held_out:
        return "none"
    text = f"{held_out['examples']:,} training images"
    if held_out.get("selection"):
        text += f" ({held_out['selection']}" + (f", seed {held_out['seed']})" if held_out.get("seed") is not None else ")")
    return text + (f", used for {held_out['used_for']}" if held_out.get("used_for") else "")


_ANSWERS = {True: "yes", False: "no", None: "not recorded"}


def _test_informed(preset):
    answer = _ANSWERS[preset.test_informed]
    return f"{answer} — {preset.decisions}" if preset.decisions else answer


def _classes(names):
    shown = names if len(names) <= 10 else names[:5] + ("...",) + names[-2:]
    return ", ".join(f'"{n}"' if n != "..." else n for n in shown)


def _validation_curve(preset):
    """Hold-out accuracy against epochs: a two-row table (every epoch up to 12, else 1, every 5th and the last)."""
    curve = preset.validation_curve
    if not curve:
        return []
    shown = range(1, len(curve) + 1) if len(curve) <= 12 else sorted({1, *range(5, len(curve) + 1, 5), len(curve)})
    when = "each epoch" if len(curve) == preset.epochs else f"each of the last {len(curve)} of the {preset.epochs} epochs (the final stage)"
    return [
        f"**Validation curve.** Accuracy on the validation hold-out after {when}"
        + (" (epochs 1, 5, 10, ... and the last shown; every epoch is in the training log):" if len(shown) < len(curve) else ":"),
        "",
        "| epoch | " + " | ".join(str(epoch) for epoch in shown) + " |",
        "|---|" + "---:|" * len(shown),
        "| validation accuracy (%) | " + " | ".join(f"{100 * curve[epoch - 1]:.2f}" for epoch in shown) + " |",
        "",
    ]


def _paragraph(label, text):
    return [f"**{label}.** {text}", ""] if text else []


def model_card(model: str, name: str) -> str:
    """Markdown model card of preset ``model/name``: what it is, its use and limits, data, training, evaluation, use, license, citation."""
    preset = registry.get(model, name)
    subset = preset.subset
    hours = preset.train_seconds / 3600
    shape = "x".join(str(d) for d in preset.kwargs.get("input_shape", ()))
    correct = round(preset.test_accuracy * preset.test_examples)
    log = f" Training log: `{preset.log}` in the source repository." if preset.log else ""
    lines = [
        f"#### `{preset.model}(weights=\"{preset.name}\")`",
        "",
        *([preset.description, ""] if preset.description else []),
        *_paragraph("Intended use and limitations", preset.limitations),
        f"**Training data.** {_dataset_description(preset.dataset)}: the training split"
        + (" minus the validation hold-out" if preset.validation else "")
        + f"; the test split was not trained on. Validation hold-out: {_validation(preset)}.",
        "",
        *_paragraph("Training procedure", f"{preset.procedure}{log}".strip()),
        f"**Evaluation.** **{100 * preset.test_accuracy:.2f} %** top-1 accuracy ({correct:,} of {preset.test_examples:,}) on the "
        f"full official {preset.dataset} test set, measured once with the shipped file on the test images as they come "
        f"(scaled to [0, 1]); the test suite checks {100 * preset.subset_accuracy:.2f} % on the first "
        f"{subset['limit']:,} images of `{subset['dataset']}` / `{subset['split']}`. "
        + (f"{preset.notes} " if preset.notes else "")
        + f"Test-informed decisions: {_test_informed(preset)}",
        "",
        *_validation_curve(preset),
        "**How to use.**",
        "",
        "```python",
        "from keras_capsules import applications, presets",
        f"model = applications.{preset.model}(weights=\"{preset.name}\")  # (batch, {shape.replace('x', ', ')}) images in [0, 1]",
        f"top3 = presets.decode_predictions(model.predict(images), \"{preset.key}\", top=3)  # [(index, name, score), ...]",
        "```",
        "",
        "| | |",
        "|---|---|",
        f"| classes | {_classes(preset.class_names)} |",
        f"| parameters | {preset.parameters:,} |",
        f"| constructor arguments | `{', '.join(f'{k}={v!r}' for k, v in sorted(preset.kwargs.items()))}` |",
        f"| training | recipe `{' / '.join(preset.recipe)}`, {preset.epochs} epochs, {hours:.1f} h on {preset.hardware} |",
        f"| command | `{preset.command}` |",
        f"| file | `{preset.file}` ({_size(preset)}, {preset.storage_dtype}), SHA-256 `{preset.sha256[:16]}…` |",
        f"| library version | {preset.library_version} ({preset.date}) |",
    ]
    for key, value in sorted(preset.metrics.items()):
        lines.append(f"| {key.replace('_', ' ')} | {value} |")
    lines += ["", f"**License.** {LICENSE}"]
    if preset.citation:
        lines += ["", "**Citation.**", "", "```bibtex", preset.citation.strip(), "```"]
    return "\n".join(lines) + "\n"


def model_cards(model: str) -> str:
    """The cards of every preset of ``model`` (an empty string when it has none)."""
    return "\n".join(model_card(model, key.split("/", 1)[1]) for key in registry.available(model))


#: Markers around the generated sections in the docs pages and the README.
START, END = "<!-- presets:start -->", "<!-- presets:end -->"


def docs_section(model):
    """The generated "Pretrained weights" section of application ``model``'s docs page."""
    cards = model_cards(model)
    body = cards if cards else "No pretrained weights yet: `weights=None` or a file path.\n"
    return f"{START}\n## Pretrained weights\n\n{body}{END}"


def presets_table():
    """The table of every preset in the README and ``docs/presets.md`` (Markdown, between the markers)."""
    lines = [
        "| `weights=` | test accuracy (full test set) | parameters | file | validation hold-out | test-informed decisions |",
        "|---|---:|---:|---|---|---|",
    ]
    for key in registry.available():
        model, name = key.split("/", 1)
        preset = registry.get(model, name)
        held_out = f"{preset.validation['examples']:,} images" if preset.validation else "none"
        informed = _ANSWERS[preset.test_informed]
        lines.append(
            f"| `{model}(weights=\"{name}\")` | {100 * preset.test_accuracy:.2f} % {preset.dataset} ({preset.test_examples:,} images) "
            f"| {preset.parameters:,} | {_size(preset)}, {preset.storage_dtype} | {held_out} | {informed} |"
        )
    return f"{START}\n" + "\n".join(lines) + f"\n{END}"


def replace_section(text, section):
    """``text`` with the part between the markers replaced by ``section`` (appended when there are no markers)."""
    if START in text:
        before, rest = text.split(START, 1)
        return before + section + rest.split(END, 1)[1]
    return text.rstrip("\n") + "\n\n" + section + "\n"
