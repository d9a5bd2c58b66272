"""``@frozen`` makes what ``@dataclass(frozen=True, slots=True)`` makes, without compiling
at import: every ``@frozen`` class of the package is held to the standard library's class
built from the same fields (signature, doc, fields, parameters, slots, equality, hash,
repr, the frozen setters, pickling, ``replace``), and making a class compiles nothing."""

from __future__ import annotations

import builtins
import copy
import dataclasses
import importlib
import inspect
import pickle
import pkgutil
from dataclasses import FrozenInstanceError, dataclass, field, fields
from pathlib import Path

import pytest

import unmask
import unmask.backends  # installed from backends/, beside the package's folder
from unmask.plumbing import frozen as frozen_mod
from unmask.plumbing.frozen import frozen

OURS = Path(frozen_mod.__file__).resolve()


def _ours(method: object) -> bool:
    """Whether a method was made by ``@frozen`` (not written in the class body)."""
    code = getattr(getattr(method, "__wrapped__", method), "__code__", None)
    return code is not None and (
        Path(code.co_filename).resolve() == OURS or code.co_filename.startswith("<")
    )


def _frozen_classes() -> list[type]:
    found: dict[str, type] = {}
    packages = [*pkgutil.walk_packages(unmask.__path__, "unmask.")]
    packages += pkgutil.walk_packages(unmask.backends.__path__, "unmask.backends.")
    for info in packages:
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency this environment lacks
            continue
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and value.__module__ == info.name
                and vars(value).get("__getstate__") is frozen_mod._getstate
            ):
                found[f"{info.name}.{value.__qualname__}"] = value
    return [found[k] for k in sorted(found)]


CLASSES = _frozen_classes()


def _reference(cls: type) -> type:
    """The standard library's frozen slotted dataclass of ``cls``'s fields and own methods."""
    ns: dict[str, object] = {
        "__annotations__": {f.name: f.type for f in fields(cls)},
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__ if not cls.__doc__.startswith(cls.__name__ + "(") else None,
    }
    for f in fields(cls):
        kw = {"init": f.init, "repr": f.repr, "hash": f.hash, "compare": f.compare}
        if f.default is not dataclasses.MISSING:
            kw["default"] = f.default
        if f.default_factory is not dataclasses.MISSING:
            kw["default_factory"] = f.default_factory
        ns[f.name] = field(**kw)
    for name, value in vars(cls).items():
        if name in ("__post_init__", "__str__") or (
            name in ("__hash__", "__eq__", "__repr__", "__init__") and not _ours(value)
        ):
            ns[name] = value
    return dataclass(frozen=True, slots=True)(type(cls.__name__, (), ns))


def _arguments(cls: type) -> list[object]:
    """One distinct value for each field the constructor needs."""
    return [
        f"v{i}"
        for i, f in enumerate(fields(cls))
        if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]


def _make(cls: type, args: list[object]) -> tuple[object | None, str | None]:
    try:
        return cls(*args), None
    except Exception as exc:  # the same failure is asked of both classes
        return None, f"{type(exc).__name__}: {exc}"


def _outcome(fn, *args: object) -> object:
    """What ``fn(*args)`` returns, or the failure it raises, as text."""
    try:
        return fn(*args)
    except Exception as exc:  # the same failure is asked of both classes
        return f"{type(exc).__name__}: {exc}"


def test_the_package_has_frozen_classes():
    assert len(CLASSES) > 120
    assert {c.__qualname__ for c in CLASSES} >= {"Nary", "Protocol", "PartId", "Span", "Sat"}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_a_frozen_class_is_the_standard_librarys(cls):
    ref = _reference(cls)
    assert dataclasses.is_dataclass(cls)
    assert cls.__doc__ == ref.__doc__
    assert repr(cls.__dataclass_params__) == repr(ref.__dataclass_params__)
    assert (cls.__slots__, cls.__match_args__) == (ref.__slots__, ref.__match_args__)
    assert [repr(f) for f in fields(cls)] == [repr(f) for f in fields(ref)]
    args = _arguments(cls)
    ours, failed = _make(cls, args)
    theirs, ref_failed = _make(ref, args)
    assert failed == ref_failed
    # the first instance compiled the real __init__: its signature is the library's
    assert str(inspect.signature(cls)) == str(inspect.signature(ref))
    for name in ("__qualname__", "__module__", "__defaults__", "__annotations__"):
        assert repr(getattr(cls.__init__, name)) == repr(getattr(ref.__init__, name)), name
    if ours is None:
        return
    assert repr(ours) == repr(theirs)
    assert _outcome(hash, ours) == _outcome(hash, theirs)
    again, _ = _make(cls, args)
    assert ours == again and not (ours != again)  # noqa: SIM202
    assert ours != theirs  # another class
    assert ours.__getstate__() == theirs.__getstate__()
    for i in range(len(args)):  # one argument changed: equal exactly when the library's are
        changed = [*args[:i], "other", *args[i + 1 :]]
        ours_changed, theirs_changed = _make(cls, changed)[0], _make(ref, changed)[0]
        if ours_changed is not None and theirs_changed is not None:
            assert (ours == ours_changed) == (theirs == theirs_changed)
    for f in fields(cls):
        for obj in (ours, theirs):
            with pytest.raises(FrozenInstanceError) as info:
                setattr(obj, f.name, 1)
            assert str(info.value) == f"cannot assign to field {f.name!r}"
            with pytest.raises(FrozenInstanceError) as info:
                delattr(obj, f.name)
            assert str(info.value) == f"cannot delete field {f.name!r}"
    try:
        pickled = pickle.loads(pickle.dumps(ours))
    except (pickle.PicklingError, TypeError, AttributeError):
        pickled = None  # a field holds what cannot be pickled (a function, say)
    if pickled is not None:
        assert pickled == ours and pickled.__getstate__() == ours.__getstate__()
    assert copy.copy(ours) == ours
    if any(f.init for f in fields(cls)):
        assert dataclasses.replace(ours) == ours


# --- a class with every feature the package uses, both ways ----------------------------------


def _body():
    class Item:
        """An item."""

        name: str
        tags: tuple[str, ...] = ()
        note: str | None = field(default=None, compare=False, hash=False, repr=False)
        seen: list[int] = field(default_factory=list, compare=False)
        extra: dict = field(init=False, repr=False, compare=False, default_factory=dict)
        fixed: int = field(init=False, default=3)
        size: int = field(init=False, repr=False, compare=False)

        def __post_init__(self) -> None:
            object.__setattr__(self, "size", len(self.name))

    return Item


def _both() -> tuple[type, type]:
    return frozen(_body()), dataclass(frozen=True, slots=True)(_body())


def test_every_feature_behaves_as_the_standard_librarys():
    ours, ref = _both()
    for cls in (ours, ref):
        cls.__qualname__ = "Item"
    a, b = ours("x", ("t",), "n"), ref("x", ("t",), "n")
    assert str(inspect.signature(ours)) == str(inspect.signature(ref))
    assert ours.__doc__ == ref.__doc__ == "An item."
    assert repr(a) == repr(b) == "Item(name='x', tags=('t',), seen=[], fixed=3)"
    assert (a.size, a.extra, a.fixed, a.seen) == (b.size, b.extra, b.fixed, b.seen)
    assert hash(a) == hash(b) == hash(("x", ("t",), 3))
    assert a == ours("x", ("t",), "other note", [1]) and a != ours("y", ("t",))
    assert ours("x").seen is not ours("x").seen  # a new list each time
    assert a.__eq__(b) is NotImplemented
    assert dataclasses.asdict(a) == dataclasses.asdict(b)
    assert dataclasses.astuple(a) == dataclasses.astuple(b)
    assert dataclasses.replace(a, name="yy").size == 2
    for make in (lambda: ours(), lambda: ref()):
        with pytest.raises(TypeError, match="missing 1 required positional argument: 'name'"):
            make()
    with pytest.raises(AttributeError):
        object.__getattribute__(a, "__dict__")


def test_an_undocumented_class_gets_the_standard_librarys_doc():
    def body():
        class Pair:
            left: int
            right: str = "r"
            rest: list = field(default_factory=list)

        return Pair

    assert frozen(body()).__doc__ == dataclass(frozen=True, slots=True)(body()).__doc__


def test_an_explicit_hash_or_equality_is_kept_as_the_standard_library_keeps_it():
    def body(with_hash: bool):
        class Key:
            a: int

            def __eq__(self, other: object) -> bool:
                return True

            if with_hash:

                def __hash__(self) -> int:
                    return 7

        return Key

    for with_hash in (False, True):
        ours, ref = frozen(body(with_hash)), dataclass(frozen=True, slots=True)(body(with_hash))
        assert ours(1) == ours(2) and ref(1) == ref(2)
        assert hash(ours(5)) == hash(ref(5)) == (7 if with_hash else hash((5,)))


def test_what_the_standard_library_refuses_is_refused():
    def defaults_first():
        class Bad:
            a: int = 1
            b: int

        return Bad

    for make in (frozen, dataclass(frozen=True, slots=True)):
        with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
            make(defaults_first())

    class Setter:
        a: int

        def __setattr__(self, name, value):  # pragma: no cover - never called
            pass

    with pytest.raises(TypeError, match="__setattr__"):
        frozen(Setter)

    class Mutable:
        a: list = []  # noqa: RUF012 - the mistake under test

    with pytest.raises(ValueError, match="mutable default"):
        frozen(Mutable)

    @dataclass
    class Base:
        a: int

    class Derived(Base):
        b: int

    with pytest.raises(TypeError, match="cannot extend a dataclass"):
        frozen(Derived)


def test_making_a_class_compiles_nothing_and_its_first_instance_compiles_init(monkeypatch):
    compiled: list[str] = []
    real_compile, real_exec = builtins.compile, builtins.exec
    monkeypatch.setattr(
        builtins,
        "compile",
        lambda src, name, *a, **k: compiled.append(name) or real_compile(src, name, *a, **k),
    )
    monkeypatch.setattr(
        builtins, "exec", lambda code, *a: compiled.append("exec") or real_exec(code, *a)
    )
    cls = frozen(_body())
    assert compiled == []
    cls("x")
    cls("y")
    assert compiled == [f"<{cls.__qualname__}.__init__>", "exec"]
    {cls("x")}
    assert compiled[2:] == [f"<{cls.__qualname__}.__hash__>", "exec"]


def test_a_plain_class_gets_its_init_from_a_template_without_compiling(monkeypatch):
    def body():
        class Point:
            x: int
            y: int = 0
            label: str = field(default="p", compare=False)

        return Point

    frozen(body())(1)  # the template for three fields, compiled once in the process
    compiled: list[str] = []
    real_compile = builtins.compile
    monkeypatch.setattr(
        builtins,
        "compile",
        lambda src, name, *a, **k: compiled.append(name) or real_compile(src, name, *a, **k),
    )
    ours, ref = frozen(body()), dataclass(frozen=True, slots=True)(body())
    a, b = ours(1, 2), ref(1, 2)
    assert compiled == []
    assert repr(a).rsplit(".", 1)[1] == repr(b).rsplit(".", 1)[1] == "Point(x=1, y=2, label='p')"
    assert (a.x, a.y, a.label) == (b.x, b.y, b.label) == (1, 2, "p")
    assert ours(x=3, label="q") == ours(3) and hash(ours(3)) == hash(ref(3))
    assert ours.__init__.__defaults__ == ref.__init__.__defaults__ == (0, "p")
    for make in (ours, ref):
        with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
            make()
        with pytest.raises(TypeError, match="got an unexpected keyword argument 'z'"):
            make(1, z=2)
        with pytest.raises(TypeError, match="multiple values for argument 'x'"):
            make(1, x=2)
