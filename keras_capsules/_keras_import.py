"""``import keras_capsules`` without Keras: the Keras subpackages load on first use, or as soon as Keras does.

Importing the package imports neither Keras nor TensorFlow, so ``keras-capsules --help`` answers at
once. The subpackages that register Keras objects (``keras_capsules>Name``) are imported right after
Keras itself is, so ``keras.saving.load_model`` finds every class after ``import keras_capsules``,
whichever of the two comes first.
"""

import importlib
import importlib.abc
import importlib.machinery
import sys


def _initializing(module):
    return getattr(getattr(module, "__spec__", None), "_initializing", False)


class KerasImportHook(importlib.abc.MetaPathFinder):
    """Imports ``package``'s ``modules`` once ``keras`` is imported and no module of ``package`` is mid-import.

    When Keras is first imported by one of the package's own modules, the registration waits until
    that import chain has finished (importing the rest earlier could meet a half-initialised module).
    The hook removes itself once it has run.
    """

    def __init__(self, package, modules):
        self.package = package
        self.modules = tuple(modules)
        self.done = False

    def _ours(self, name):
        return name == self.package or name.startswith(self.package + ".")

    def find_spec(self, fullname, path, target=None):
        if self.done or not (fullname == "keras" or self._ours(fullname)):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        # A SourceFileLoader is made for this one spec: wrapping its exec_module touches no other module.
        if type(spec.loader) is importlib.machinery.SourceFileLoader:
            exec_module = spec.loader.exec_module

            def exec_then_register(module):
                exec_module(module)
                self.register(finished=fullname)

            spec.loader.exec_module = exec_then_register
        return spec

    def register(self, finished):
        """Imports the modules if Keras is loaded and every module of the package but ``finished`` is complete."""
        keras = sys.modules.get("keras")
        if self.done or keras is None or (finished != "keras" and _initializing(keras)):
            return
        if any(
            self._ours(name) and name != finished and _initializing(module)
            for name, module in list(sys.modules.items())
        ):
            return
        self.done = True
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for name in self.modules:
            importlib.import_module(f"{self.package}.{name}")


def import_with_keras(package, modules):
    """Imports ``package``'s ``modules`` now if Keras is loaded, else right after it is (see :class:`KerasImportHook`)."""
    if "keras" in sys.modules:
        for name in modules:
            importlib.import_module(f"{package}.{name}")
    elif not any(isinstance(finder, KerasImportHook) and finder.package == package for finder in sys.meta_path):
        sys.meta_path.insert(0, KerasImportHook(package, modules))
