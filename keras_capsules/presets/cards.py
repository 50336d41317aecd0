"""Model cards: a preset's registry record rendered as Markdown (docs pages and ``keras-capsules presets``)."""

import os

from keras_capsules import markdown
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
        text += f" ({held_out['selection']}" + (
            f", seed {held_out['seed']})" if held_out.get("seed") is not None else ")"
        )
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
    when = (
        "each epoch"
        if len(curve) == preset.epochs
        else f"each of the last {len(curve)} of the {preset.epochs} epochs (the final stage)"
    )
    return [
        f"**Validation curve.** Accuracy on the validation hold-out after {when}"
        + (
            " (epochs 1, 5, 10, ... and the last shown; every epoch is in the training log):"
            if len(shown) < len(curve)
            else ":"
        ),
        "",
        *markdown.table(
            ["epoch", *shown],
            [["validation accuracy (%)", *(f"{100 * curve[epoch - 1]:.2f}" for epoch in shown)]],
            align="l" + "r" * len(shown),
        ),
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
        f'#### `{preset.model}(weights="{preset.name}")`',
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
        f'model = applications.{preset.model}(weights="{preset.name}")  # (batch, {shape.replace("x", ", ")}) images in [0, 1]',
        f'top3 = presets.decode_predictions(model.predict(images), "{preset.key}", top=3)  # [(index, name, score), ...]',
        "```",
        "",
        *markdown.table(
            ["", ""],
            [
                ["classes", _classes(preset.class_names)],
                ["parameters", f"{preset.parameters:,}"],
                ["constructor arguments", f"`{', '.join(f'{k}={v!r}' for k, v in sorted(preset.kwargs.items()))}`"],
                [
                    "training",
                    f"recipe `{' / '.join(preset.recipe)}`, {preset.epochs} epochs, {hours:.1f} h on {preset.hardware}",
                ],
                ["command", f"`{preset.command}`"],
                ["file", f"`{preset.file}` ({_size(preset)}, {preset.storage_dtype}), SHA-256 `{preset.sha256[:16]}…`"],
                ["library version", f"{preset.library_version} ({preset.date})"],
                *([key.replace("_", " "), value] for key, value in sorted(preset.metrics.items())),
            ],
        ),
        "",
        f"**License.** {LICENSE}",
    ]
    if preset.citation:
        lines += ["", "**Citation.**", "", "```bibtex", preset.citation.strip(), "```"]
    return "\n".join(lines) + "\n"


def model_cards(model: str) -> str:
    """The cards of every preset of ``model`` (an empty string when it has none)."""
    return "\n".join(model_card(model, key.split("/", 1)[1]) for key in registry.available(model))


#: The generated block of the docs pages and the README: ``<!-- presets:start -->`` ... ``<!-- presets:end -->``.
BLOCK = "presets"


def docs_section(model):
    """The "Pretrained weights" section of application ``model``'s docs page (the content of its :data:`BLOCK`)."""
    cards = model_cards(model).removesuffix("\n")
    return "## Pretrained weights\n\n" + (cards or "No pretrained weights yet: `weights=None` or a file path.")


def presets_table():
    """The table of every preset in the README and ``docs/presets.md`` (the content of their :data:`BLOCK`)."""
    rows = []
    for key in registry.available():
        model, name = key.split("/", 1)
        preset = registry.get(model, name)
        rows.append(
            [
                f'`{model}(weights="{name}")`',
                f"{100 * preset.test_accuracy:.2f} % {preset.dataset} ({preset.test_examples:,} images)",
                f"{preset.parameters:,}",
                f"{_size(preset)}, {preset.storage_dtype}",
                f"{preset.validation['examples']:,} images" if preset.validation else "none",
                _ANSWERS[preset.test_informed],
            ]
        )
    headers = [
        "`weights=`",
        "test accuracy (full test set)",
        "parameters",
        "file",
        "validation hold-out",
        "test-informed decisions",
    ]
    return "\n".join(markdown.table(headers, rows, align="lrrlll"))


def replace_section(text, section, page):
    """``text`` with its :data:`BLOCK` holding ``section``, the block appended when the page has none yet.

    Raises:
        ValueError: naming ``page`` when its markers are repeated or out of order.
    """
    return markdown.replace_block(text, BLOCK, section, page, append=True)


def _percent(value):
    return f"{100 * value:.2f} %"


def _data_summary(metrics):
    """A folder summary (``datasets.folder_summary``) at the top level of a run's metrics, or ``None``."""
    return next((value for value in metrics.values() if isinstance(value, dict) and "images_per_class" in value), None)


def _first(limit, metrics):
    """How a run's ``limit`` chose its images: the first ones, or for a folder of images drawn class by class."""
    if str(metrics.get("dataset", "")).startswith("folder:"):
        return f"{limit:,} (drawn class by class)"
    return f"the first {limit:,}"


def _folder_training_data(metrics):
    """The "Training data" paragraph of a preset folder's card, and its per-class image table."""
    held_out = metrics.get("validation") or {}
    limit = (metrics.get("arguments") or {}).get("limit")
    text = (
        f"**Training data.** Dataset `{metrics.get('dataset', 'not recorded')}`: "
        + (f"{_first(limit, metrics)} images of its training split" if limit else "its training split")
        + (
            f" minus a validation hold-out of {held_out['examples']:,} images ({held_out.get('selection', 'selection not recorded')})."
            if held_out.get("examples")
            else "; no validation hold-out."
        )
    )
    lines = [text, ""]
    summary = _data_summary(metrics)
    if summary:
        splits = list(summary["images_per_class"])
        counts = summary["images_per_class"]
        lines += [
            "Images per class in the folder it was read from:",
            "",
            *markdown.table(
                ["class", *splits],
                [[name, *(f"{counts[split].get(name, 0):,}" for split in splits)] for name in summary["class_names"]],
                align="l" + "r" * len(splits),
            ),
            "",
        ]
    return lines


def _folder_procedure(metrics):
    """The "Training procedure" paragraph of a preset folder's card."""
    recipe = metrics.get("recipe") or {}
    stages = metrics.get("stages")
    epochs = metrics.get("epochs_completed")
    parts = [f"Recipe `{' / '.join(str(metrics.get(key, '?')) for key in ('model', 'dataset', 'variant'))}`"]
    if epochs is not None:
        parts.append(
            f"{epochs} epochs"
            + (" (" + ", ".join(f"{stage['name']} {stage['epochs']}" for stage in stages) + ")" if stages else "")
        )
    if recipe:
        parts.append(
            f"optimizer {recipe.get('optimizer')} at learning rate {recipe.get('learning_rate')} ({recipe.get('lr_schedule', 'constant')} schedule), "
            f"batch size {recipe.get('batch_size')}, loss {recipe.get('loss')}, augmentation {recipe.get('augmentation') or 'none'}"
        )
    if metrics.get("train_seconds") is not None:
        parts.append(
            f"{metrics['train_seconds'] / 3600:.2f} h of training ({metrics.get('replicas', 1)} replica(s), strategy {metrics.get('strategy', 'default')})"
        )
    return _paragraph("Training procedure", "; ".join(parts) + ".")


def _folder_evaluation(metrics):
    """The "Evaluation" paragraph of a preset folder's card: validation and test accuracies as the run measured them."""
    held_out = (metrics.get("validation") or {}).get("examples")
    measured = []
    if metrics.get("validation_accuracy") is not None:
        size = f" ({held_out:,} images)" if held_out else ""
        measured.append(
            f"**{_percent(metrics['validation_accuracy'])}** on the validation hold-out{size} after the last epoch"
        )
    eval_limit = (metrics.get("arguments") or {}).get("eval_limit")
    for split, values in (metrics.get("evaluations") or {}).items():
        if values.get("accuracy") is not None:
            on = f"{_first(eval_limit, metrics)} images of `{split}`" if eval_limit else f"the `{split}` split"
            measured.append(f"**{_percent(values['accuracy'])}** on {on}, evaluated once at the end of the run")
    text = (
        "Top-1 accuracy as the training run measured it: " + "; ".join(measured) + "."
        if measured
        else "The run recorded no accuracy."
    )
    return _paragraph("Evaluation", text)


def _call(model, arguments):
    return f"{model}({', '.join(f'{key}={value!r}' for key, value in sorted(arguments.items()))})"


def folder_card(config: dict, metadata: dict, text: str | None = None, title: str = "Preset") -> str:
    """Markdown model card of a preset folder (its ``README.md``) from its ``config.json`` and ``metadata.json``.

    The sections of :func:`model_card`: what the model is (``text``, the saver's own words, first),
    intended use and limitations, training data, procedure and evaluation from the run's metrics (when
    recorded), how to use, and a table of the facts (classes, parameters, constructor, file, versions).
    """
    model = config.get("constructor")
    names = metadata.get("class_names")
    preprocessing = metadata.get("preprocessing") or {}
    metrics = metadata.get("metrics") or {}
    weights = metadata["weights"]
    shape = "x".join(str(size) for size in preprocessing.get("input_shape", ()))
    low, high = preprocessing.get("input_range", [0, 1])
    what = f"`{model}` model" if model else "Keras model (no application constructor recorded)"
    classes = f"{len(names)} classes ({_classes(tuple(names))})" if names else "classes (not named)"
    lines = [f"# {title}", ""]
    if text:
        lines += [text.strip(), ""]
    lines += [
        f"This {what} was saved with keras-capsules {metadata.get('keras_capsules_version')} as a preset folder: "
        "`presets.load(folder)` rebuilds it with its weights and class names.",
        "",
        *_paragraph(
            "Intended use and limitations",
            f"Sorts {shape} images with values in [{low}, {high}] into its {classes}. It was trained and measured only on the "
            "data described here; images unlike them (another size, colour, subject or camera) are outside what it was measured "
            "on, and its accuracies hold for data like its evaluation images only."
            + (
                ""
                if metrics
                else " No training run is recorded with this folder, so nothing is known here about its data or accuracy."
            ),
        ),
    ]
    if metrics:
        lines += [*_folder_training_data(metrics), *_folder_procedure(metrics), *_folder_evaluation(metrics)]
    load = f"applications.{model}(weights=folder)" if model else "presets.load(folder)"
    lines += [
        "**How to use.**",
        "",
        "```python",
        "from keras_capsules import applications, presets",
        f"model = presets.load(folder)  # or {load}" if model else "model = presets.load(folder)",
        f"scores = model.predict(images)  # (batch, {shape.replace('x', ', ')}) images in [{low}, {high}]",
        "top3 = presets.decode_predictions(scores, model, top=3)  # [(index, class name, score), ...] per image",
        "```",
        "",
        *markdown.table(
            ["", ""],
            [
                ["classes", _classes(tuple(names)) if names else "not named"],
                ["parameters", f"{metadata.get('parameters', 0):,}"],
                [
                    "constructor",
                    f"`{_call(model, config.get('arguments') or {})}`"
                    if model
                    else "none recorded: built from its Keras config",
                ],
                [
                    "weights",
                    f"`{weights['file']}` ({weights.get('storage_dtype', 'float32')}), SHA-256 `{weights['sha256']}`",
                ],
                [
                    "saved with",
                    f"keras-capsules {metadata.get('keras_capsules_version')}, Keras {metadata.get('keras_version')} "
                    f"({metadata.get('backend')}), {metadata.get('date_saved')}",
                ],
            ],
        ),
    ]
    return "\n".join(lines) + "\n"
