"""The command line asks TensorFlow for its pooling CPU allocator, never over the user's setting."""

import os
import subprocess
import sys

from keras_capsules.cli import cpu_allocator

FRESH = {"sys": sys}  # the modules of a `keras-capsules` process before TensorFlow loads


def test_set_when_unset_and_the_users_value_stands():
    environ = {}
    assert cpu_allocator.pool_unless_set(environ, modules=FRESH) and environ == {"TF_CPU_ALLOCATOR_USE_BFC": "true"}
    environ = {"TF_CPU_ALLOCATOR_USE_BFC": "false"}
    assert not cpu_allocator.pool_unless_set(environ, modules=FRESH)
    assert environ == {"TF_CPU_ALLOCATOR_USE_BFC": "false"}


def test_nothing_changes_once_tensorflow_is_imported():
    environ = {}
    assert not cpu_allocator.pool_unless_set(environ, modules={**FRESH, "tensorflow": object()}) and environ == {}


def test_tensorflow_in_a_command_line_process_pools():
    """In a `keras-capsules` process (main() runs `--version`, which loads nothing), TensorFlow loaded afterwards with
    oneDNN off keeps allocator statistics, which only its BFC allocator has; without the setting it has none."""
    script = (
        "import sys; from keras_capsules import cli\n"
        "if sys.argv[1] == 'cli':\n"
        "    try:\n        cli.main(['--version'])\n    except SystemExit:\n        pass\n"
        "import tensorflow as tf\n"
        "tf.ones((256, 256)) @ tf.ones((256, 256))\n"
        "try:\n    print('peak', tf.config.experimental.get_memory_info('CPU:0')['peak'])\n"
        "except ValueError:\n    print('no statistics')\n"
    )
    environ = {k: v for k, v in os.environ.items() if k != "TF_CPU_ALLOCATOR_USE_BFC"}
    environ.update(TF_ENABLE_ONEDNN_OPTS="0", TF_CPP_MIN_LOG_LEVEL="3")

    def printed(mode):
        run = subprocess.run(
            [sys.executable, "-c", script, mode], env=environ, capture_output=True, text=True, check=True
        )
        return run.stdout.split("\n")[-2]

    assert printed("cli").startswith("peak ") and int(printed("cli").split()[1]) >= 256 * 256 * 4
    assert printed("plain") == "no statistics"
