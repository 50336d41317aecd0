"""Model cards: a preset's registry record rendered as Markdown (docs pages and ``keras-capsules presets``)."""

import os

from keras_capsules.presets import registry


def _size(preset):
    path = os.path.join(registry.PACKAGE_DIR, preset.file)
    return f"{os.path.getsize(path) / 1e6:.1f} MB" if os.path.isfile(path) else "not in the package"


def model_card(model, name):
    """Markdown model card of preset ``model/name``."""
    preset = registry.get(model, name)
    subset = preset.subset
    hours = preset.train_seconds / 3600
    lines = [
        f"#### `{preset.model}(weights=\"{preset.name}\")`",
        "",
        "| | |",
        "|---|---|",
        f"| test accuracy | **{100 * preset.test_accuracy:.2f} %** on the full {preset.dataset} test set ({preset.test_examples:,} images), measured with the shipped file |",
        f"| fixed subset | {100 * preset.subset_accuracy:.2f} % on the first {subset['limit']:,} images of `{subset['dataset']}` / `{subset['split']}` (checked by the tests) |",
        f"| constructor arguments | `{', '.join(f'{k}={v!r}' for k, v in sorted(preset.kwargs.items()))}` |",
        f"| parameters | {preset.parameters:,} |",
        *([f"| input | the {preset.dataset} images through the evaluation transform of augmentation `{preset.evaluation}`: "
           f"`datasets.load(..., augment=\"{preset.evaluation}\", training=False)` |"] if preset.evaluation else []),
        f"| training | recipe `{' / '.join(preset.recipe)}`, {preset.epochs} epochs, {hours:.1f} h on {preset.hardware} |",
        f"| command | `{preset.command}` |",
        f"| file | `{preset.file}` ({_size(preset)}, {preset.storage_dtype}), SHA-256 `{preset.sha256[:16]}…` |",
        f"| library version | {preset.library_version} ({preset.date}) |",
    ]
    for key, value in sorted(preset.metrics.items()):
        lines.append(f"| {key.replace('_', ' ')} | {value} |")
    if preset.notes:
        lines += ["", preset.notes]
    return "\n".join(lines) + "\n"


def model_cards(model):
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
    """The README's table of every preset (Markdown, between the markers)."""
    lines = ["| `weights=` | test accuracy (full test set) | parameters | file |", "|---|---:|---:|---|"]
    for key in registry.available():
        model, name = key.split("/", 1)
        preset = registry.get(model, name)
        lines.append(
            f"| `{model}(weights=\"{name}\")` | {100 * preset.test_accuracy:.2f} % {preset.dataset} ({preset.test_examples:,} images) "
            f"| {preset.parameters:,} | {_size(preset)}, {preset.storage_dtype} |"
        )
    return f"{START}\n" + "\n".join(lines) + f"\n{END}"


def replace_section(text, section):
    """``text`` with the part between the markers replaced by ``section`` (appended when there are no markers)."""
    if START in text:
        before, rest = text.split(START, 1)
        return before + section + rest.split(END, 1)[1]
    return text.rstrip("\n") + "\n\n" + section + "\n"
