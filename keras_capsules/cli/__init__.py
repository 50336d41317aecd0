"""The ``keras-capsules`` command line: ``train``, ``evaluate``, ``predict``, ``export``, ``recipes``, ``explain``, ``tune``, ``presets``, ``robustness``.

Each subcommand is one module with one ``add_<name>_command(commands)`` function that adds its parser
and sets ``handler``; :data:`COMMANDS` lists them, so a new subcommand is one module and one list entry.
What several commands share is in :mod:`keras_capsules.cli.options`. Building the parser imports
neither Keras nor TensorFlow (``--help`` and ``--version`` answer at once): every handler imports what
it needs.
"""

import argparse
import os
import sys

from keras_capsules.cli import cpu_allocator, onednn
from keras_capsules.cli.evaluate import add_evaluate_command
from keras_capsules.cli.explain import add_explain_command
from keras_capsules.cli.export import add_export_command
from keras_capsules.cli.native_logs import import_keras
from keras_capsules.cli.predict import add_predict_command
from keras_capsules.cli.presets import add_presets_command
from keras_capsules.cli.recipes import add_recipes_command
from keras_capsules.cli.robustness import add_robustness_command
from keras_capsules.cli.train import add_train_command
from keras_capsules.cli.tune import add_tune_command
from keras_capsules.cli.user_errors import report
from keras_capsules.version import __version__

#: Subcommand builders, in help order.
COMMANDS = [
    add_train_command, add_evaluate_command, add_predict_command, add_export_command, add_recipes_command, add_explain_command,
    add_tune_command, add_presets_command, add_robustness_command,
]  # fmt: skip
_VERBOSE_HELP = "show the traceback of user errors too (default: one line; unexpected errors always show theirs)"


def build_parser():
    """The ``keras-capsules`` parser; building it imports neither Keras nor TensorFlow."""
    parser = argparse.ArgumentParser(
        prog="keras-capsules",
        description="Capsule networks and GLOM for Keras 3. `keras-capsules COMMAND --help` describes each command.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--verbose", action="store_true", help=_VERBOSE_HELP)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add_command in COMMANDS:
        add_command(commands)
    for command in commands.choices.values():  # also after the command: keras-capsules train ... --verbose
        command.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS, help=_VERBOSE_HELP)
    return parser


def main(argv=None):
    """Runs one subcommand.

    Returns:
        0 on success; 2 with a one-line ``error:`` for a user error (:func:`~keras_capsules.cli.user_errors.is_user_error`;
        its traceback too with ``--verbose``); 1 with the traceback of any other error; 130 after Ctrl-C.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow loads: no INFO/WARNING lines of its C++ code
    onednn.turn_off_where_affected()  # TensorFlow 2.21's oneDNN kernels corrupt the heap now and then
    cpu_allocator.pool_unless_set()  # malloc maps each large tensor anew every step
    args = build_parser().parse_args(argv)
    try:
        import_keras()
        from keras_capsules.datasets.registry import command_line_spelling

        with command_line_spelling():
            return args.handler(args)
    except KeyboardInterrupt:
        message = getattr(args, "interrupted", "stopped")
        if getattr(args, "no_resume", False):
            message = "stopped; run it again without --no-resume to resume"
        print(f"\nkeras-capsules {args.command}: {message}.", file=sys.stderr)
        return 130
    except Exception as error:
        return report(error, args.command, args.verbose)
