"""Child-process helpers: prove that an exported model serves without ``keras_capsules`` importable."""

import textwrap

#: Python source that makes every ``keras_capsules`` import fail in the child process and sets
#: ``blocked`` to whether that worked; a child script starts with it, then imports what it serves with.
BLOCK_LIBRARY = textwrap.dedent(
    """
    import importlib.abc, json, sys

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "keras_capsules" or name.startswith("keras_capsules."):
                raise ImportError(f"{name} is blocked in this process")

    sys.meta_path.insert(0, Blocker())
    try:
        import keras_capsules  # noqa: F401
        blocked = False
    except ImportError:
        blocked = True
    """
)
