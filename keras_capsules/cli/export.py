"""``keras-capsules export``: a ``.keras`` model as a standalone SavedModel, ONNX or LiteRT model.

Imports neither Keras nor TensorFlow until the command runs (``keras-capsules --help`` stays fast).
"""


def _export(args):
    import os

    from keras_capsules.export import CLASS_NAMES_ASSET, export_keras_file

    export_keras_file(args.model_file, args.output_dir, overwrite=args.overwrite, format=args.format)
    if args.format == "savedmodel":
        named = os.path.isfile(os.path.join(args.output_dir, CLASS_NAMES_ASSET))
        print(
            f"SavedModel written to {args.output_dir} (endpoints: serve, serving_default); it loads without keras_capsules"
            + (f"; the class names, in output order, are in {CLASS_NAMES_ASSET}." if named else ".")
        )
    else:
        runtime = "ONNX Runtime" if args.format == "onnx" else "the LiteRT interpreter"
        print(f"{args.format} file written to {args.output_dir}; it runs with {runtime}, without keras_capsules.")
    return 0


def add_export_command(commands):
    export = commands.add_parser(
        "export",
        help="export a .keras model to a standalone SavedModel, ONNX or LiteRT model",
        description="Writes MODEL.keras as a TensorFlow SavedModel (endpoints serve and serving_default; the default), an ONNX "
        "file (--format onnx, OUTPUT ending in .onnx) or a LiteRT file (--format litert, OUTPUT ending in .tflite), each "
        "runnable without keras_capsules. A model that names its classes ships them: assets/class_names.json in the "
        "SavedModel, the metadata entry class_names of the ONNX file (a LiteRT file has no place for them). Nothing "
        "existing is replaced without --overwrite, and never MODEL.keras or the folder holding it.",
    )
    export.add_argument("model_file", metavar="MODEL.keras", help="the model file")
    export.add_argument(
        "output_dir", metavar="OUTPUT",
        help="savedmodel: a new folder (an existing non-empty one only with --overwrite); onnx/litert: a new file",
    )  # fmt: skip
    export.add_argument(
        "--format",
        choices=("savedmodel", "onnx", "litert"),
        default="savedmodel",
        help="export format (default: savedmodel)",
    )
    export.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing OUTPUT, never one that holds MODEL.keras (default: off)",
    )
    export.set_defaults(handler=_export)
