"""``import keras_capsules`` is light, and every Keras class is registered once Keras is imported, whoever imports it first.

Each case runs in a fresh interpreter (this process imported Keras long ago).
"""

import os
import subprocess
import sys
import textwrap

import pytest

from keras_capsules.testing.tiers import large

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECK = textwrap.dedent(
    """
    import sys
    import keras
    missing = [name for name in ("PrimaryCaps", "MarginLoss", "CapsuleClassifier", "ReconstructionLoss")
               if keras.saving.get_registered_object("keras_capsules>" + name) is None]
    assert not missing, missing
    assert not [f for f in sys.meta_path if type(f).__name__ == "KerasImportHook"]  # the hook removed itself
    print("ok")
    """
)


# Keras first imported by one of the package's own modules, mid-way through its import chain (the case of
# `import keras_capsules; import keras` is cli/help_test's).
@pytest.mark.parametrize("first", ["import keras_capsules.layers"])
@large
def test_every_keras_class_is_registered_after_keras_is_imported(first):
    done = subprocess.run(
        [sys.executable, "-c", first + "\n" + CHECK], capture_output=True, text=True, cwd=ROOT, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
