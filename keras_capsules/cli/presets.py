"""``keras-capsules presets``: the pretrained weights (accuracy on the full test set, parameters, file), a model card, a download.

Imports neither Keras nor TensorFlow until the command runs (``keras-capsules --help`` stays fast).
"""

from keras_capsules.cli.options import model_name, preset_option


def _presets(args):
    from keras_capsules import presets

    if args.download:
        print(f"downloaded to {presets.download(*preset_option(args.download, '--download'))}")
        return 0
    if args.card:
        print(presets.model_card(*preset_option(args.card, "--card")), end="")
        return 0
    keys = presets.available(model_name(args.model) if args.model else None)
    if not keys:
        print("no presets" + (f" for {args.model}" if args.model else ""))
        return 0
    rows = [("weights=", "test accuracy", "dataset", "parameters", "file")]
    for key in keys:
        model, name = key.split("/", 1)
        preset = presets.get(model, name)
        try:
            where = presets.locate(preset)
        except presets.PresetFileError:
            where = "not on this machine" + (" (--download)" if preset.url else "")
        rows.append(
            (
                f"{model}(weights={name!r})",
                f"{100 * preset.test_accuracy:.2f} %",
                preset.dataset,
                f"{preset.parameters:,d}",
                where,
            )
        )
    print(_table(rows, right=(1, 3)))
    return 0


def _table(rows, right=()):
    """``rows`` of strings as aligned columns two spaces apart; the columns numbered in ``right`` are right-aligned."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [
            cell.rjust(width) if column in right else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths))
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def add_presets_command(commands):
    listing = commands.add_parser(
        "presets",
        help="list the pretrained weights (accuracy on the full test set, parameters, file)",
        description="Pretrained weights load with MODEL(weights=NAME); the accuracy is measured on the full official test "
        "set with the file that ships. Files are searched inside the package, then in $KERAS_CAPSULES_PRESETS, then in "
        "the Keras cache (~/.keras/keras_capsules).",
    )
    listing.add_argument("model", nargs="?", help="only this model's presets, any case (default: every model's)")
    listing.add_argument(
        "--card", metavar="MODEL/NAME", help="print the model card of one preset, in Markdown (default: the table)"
    )
    listing.add_argument(
        "--download",
        metavar="MODEL/NAME",
        help="download a preset that has a URL into the Keras cache (default: no download)",
    )
    listing.set_defaults(handler=_presets)
