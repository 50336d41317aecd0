"""``keras-capsules --help`` imports neither Keras nor TensorFlow; once a command runs, TensorFlow loads without log noise.

Run in fresh interpreters: this test process has imported Keras long ago.
"""

import json
import os
import subprocess
import sys
import textwrap
from importlib import metadata

from keras_capsules.testing.tiers import large

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Every subcommand's --help, --version, then a command that needs Keras, in one fresh interpreter.
SCRIPT = textwrap.dedent(
    """
    import contextlib, io, json, sys
    from keras_capsules import cli

    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    helps = {}
    for argv in [["--help"], ["--version"], *([name, "--help"] for name in commands)]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                cli.main(argv)
            except SystemExit as exit:
                assert exit.code == 0, (argv, exit.code)
        helps[" ".join(argv)] = out.getvalue()
    before = sorted(m for m in ("keras", "tensorflow", "jax", "torch") if m in sys.modules)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["recipes", "capsnet"])  # needs Keras: TensorFlow loads here
    import keras

    registered = keras.saving.get_registered_object("keras_capsules>PrimaryCaps") is not None
    print(json.dumps({"helps": helps, "before": before, "code": code, "recipes": out.getvalue(), "registered": registered}))
    """
)


@large
def test_help_and_version_import_no_backend_and_commands_load_tensorflow_quietly():
    environment = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # the user set nothing
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, env=environment, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["before"] == []  # neither --help nor --version imported Keras, TensorFlow or another backend
    helps = report["helps"]
    assert helps["--version"].strip() == f"keras-capsules {metadata.version('keras-capsules')}"
    assert "predict" in helps["--help"] and "usage: keras-capsules predict" in helps["predict --help"]
    assert "--validation-examples IMAGES" in helps["train --help"] and "--epochs EPOCHS" in helps["train --help"]
    # TensorFlow's C++ start-up lines (oneDNN notice, absl preamble, CPU features) do not reach the user.
    assert report["code"] == 0 and report["recipes"].startswith("CapsNet ")
    for noise in ("oneDNN", "absl::InitializeLog", "cpu_feature_guard", "I0000"):
        assert noise not in done.stderr, done.stderr
    # The library's Keras classes are registered once Keras is imported: plain keras.saving.load_model finds them.
    assert report["registered"]
