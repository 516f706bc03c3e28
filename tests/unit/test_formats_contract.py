"""The formats' room (``formats/``, :mod:`mtfleet.formats`): every format implements the one
contract (:class:`mtfleet.formats.base.DocumentFormat`) and is in the one registry, by the
module :data:`mtfleet.formats.MODULES` names; a format class written and left out of the
registry would be a file type the fleet silently refuses."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from mtfleet import formats
from mtfleet.formats.base import DocumentFormat


def format_classes() -> dict[str, list[type[DocumentFormat]]]:
    """Each module of the package and the concrete formats it defines."""
    found: dict[str, list[type[DocumentFormat]]] = {}
    for info in pkgutil.iter_modules(formats.__path__):
        module = importlib.import_module(f"mtfleet.formats.{info.name}")
        classes = [
            cls
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, DocumentFormat)
            and cls.__module__ == module.__name__
            and not inspect.isabstract(cls)
        ]
        if classes:
            found[info.name] = classes
    return found


def test_every_format_class_is_registered_by_its_module_in_the_registry() -> None:
    every = formats.formats()
    defined = format_classes()
    assert sorted(defined) == sorted(formats.MODULES)
    registered = {type(fmt) for fmt in every}
    for classes in defined.values():
        assert any(cls in registered for cls in classes), classes
    assert {type(fmt).__module__.rsplit(".", 1)[1] for fmt in every} == set(formats.MODULES)


def test_each_format_says_its_name_extensions_and_media_type() -> None:
    claimed: dict[str, str] = {}
    for fmt in formats.formats():
        assert fmt.name == fmt.name.lower() and fmt.name.isidentifier(), fmt.name
        assert formats.for_name(fmt.name.upper()) is fmt
        assert fmt.extensions, fmt.name
        for ext in fmt.extensions:
            assert ext.startswith(".") and ext == ext.lower(), (fmt.name, ext)
            assert claimed.setdefault(ext, fmt.name) == fmt.name, (ext, claimed[ext], fmt.name)
        assert "/" in fmt.media_type, fmt.name


def test_a_format_left_out_of_the_modules_would_be_found() -> None:
    """The check above reads the package itself, not the registry's own list."""
    assert "text" in format_classes() and "base" not in format_classes()
