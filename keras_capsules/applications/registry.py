"""Registry of application configurations (timm style): every registered entry is tested automatically."""

import dataclasses
from collections.abc import Callable

_ENTRIES: dict[str, "ApplicationEntry"] = {}


@dataclasses.dataclass(frozen=True)
class ApplicationEntry:
    """One paper configuration of an application.

    Attributes:
        name: unique key, ``"Constructor/variant"``.
        constructor: the application function.
        kwargs: arguments that select the configuration.
        trainable_params: the reference trainable parameter count (docs/reference/paper-results.md), or ``None``.
        total_params: the reference total parameter count, or ``None``.
        source: where the reference count comes from.
        roundtrip: run the ``.keras``/export round trip in the registry test (off only for models too
            large to save quickly, e.g. the 72M-parameter GLOM ablation, whose count is still checked).
        test_settings: small arguments (input shape, 3 classes, narrower layers) put on top of
            ``kwargs`` when the registry-wide contract test (``applications/contract_test.py``) builds
            the configuration; they keep its architecture.
        test_routers: the contract test builds the constructor with every router it allows on this
            configuration (default: on the constructor's first configuration by name).
    """

    name: str
    constructor: object
    kwargs: dict
    trainable_params: int | None = None
    total_params: int | None = None
    source: str = ""
    roundtrip: bool = True
    test_settings: dict = dataclasses.field(default_factory=dict)
    test_routers: bool = False

    def build(self, **overrides):
        return self.constructor(**{**self.kwargs, **overrides})


def register_configuration(
    name: str,
    constructor: Callable,
    kwargs: dict | None = None,
    trainable_params: int | None = None,
    total_params: int | None = None,
    source: str = "",
    roundtrip: bool = True,
    test_settings: dict | None = None,
    test_routers: bool = False,
) -> ApplicationEntry:
    """Registers a paper configuration under ``name`` (the arguments are the :class:`ApplicationEntry` attributes)."""
    if name in _ENTRIES:
        raise ValueError(f"register_configuration: {name!r} is already registered.")
    _ENTRIES[name] = ApplicationEntry(
        name,
        constructor,
        dict(kwargs or {}),
        trainable_params,
        total_params,
        source,
        roundtrip,
        dict(test_settings or {}),
        test_routers,
    )
    return _ENTRIES[name]


def list_configurations() -> list[str]:
    """Names of every registered configuration, sorted."""
    return sorted(_ENTRIES)


def get_configuration(name: str) -> ApplicationEntry:
    """The :class:`ApplicationEntry` registered under ``name``."""
    if name not in _ENTRIES:
        raise ValueError(
            f"get_configuration: argument `name` expected one of {list_configurations()}, received {name!r}."
        )
    return _ENTRIES[name]
