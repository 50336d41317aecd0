"""The command line turns oneDNN off on TensorFlow 2.21 only, and never over the user's setting."""

import os
import subprocess
import sys

from keras_capsules.cli import onednn

FRESH = {"sys": sys}  # the modules of a `keras-capsules` process before TensorFlow loads


def test_affected_release_only_and_the_users_value_stands():
    environ = {}
    assert onednn.turn_off_where_affected(environ, version="2.21.0", modules=FRESH) and environ == {
        "TF_ENABLE_ONEDNN_OPTS": "0"
    }
    for version in ("2.20.0", "2.22.0", "2.3.1"):
        environ = {}
        assert not onednn.turn_off_where_affected(environ, version=version, modules=FRESH) and environ == {}
    environ = {"TF_ENABLE_ONEDNN_OPTS": "1"}
    assert not onednn.turn_off_where_affected(environ, version="2.21.0", modules=FRESH) and environ == {
        "TF_ENABLE_ONEDNN_OPTS": "1"
    }


def test_nothing_changes_once_tensorflow_is_imported():
    environ = {}
    assert (
        not onednn.turn_off_where_affected(environ, version="2.21.0", modules={**FRESH, "tensorflow": object()})
        and environ == {}
    )


def test_the_command_line_process_runs_with_the_setting():
    """`keras-capsules` applies it before TensorFlow loads (main() runs `--version`, which loads nothing)."""
    script = (
        "import os; from keras_capsules import cli\n"
        "try:\n    cli.main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print(os.environ.get('TF_ENABLE_ONEDNN_OPTS'))"
    )
    environ = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    printed = subprocess.run(
        [sys.executable, "-c", script], env=environ, capture_output=True, text=True, check=True
    ).stdout.split()[-1]
    expected = "0" if onednn.installed_tensorflow().startswith(onednn.AFFECTED_RELEASES) else "None"
    assert printed == expected
