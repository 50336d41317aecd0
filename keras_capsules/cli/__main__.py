"""``python -m keras_capsules.cli COMMAND ...``: the ``keras-capsules`` command."""

import sys

from keras_capsules.cli import main

sys.exit(main())
