"""``@frozen``: ``@dataclass(frozen=True, slots=True)`` without compiling code at import.

Contract: ``@frozen`` makes of a class the frozen, slotted dataclass that ``@dataclass(frozen=True,
slots=True)`` makes: the same fields (``dataclasses.fields``, ``replace``, ``asdict`` and
``is_dataclass`` see a dataclass; its ``__dataclass_params__`` say frozen), ``__slots__``,
``__match_args__``, ``__doc__``, and the methods the standard library adds (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, the frozen ``__setattr__`` and ``__delattr__``,
``__getstate__``/``__setstate__`` for pickling), behaving as Python 3.11's do;
``tests/plumbing/test_frozen.py`` holds every such class of the package to the standard library's.
It supports what the package uses (defaults, default factories, ``init=False`` fields,
``__post_init__``); an ``InitVar``, a keyword-only field or a dataclass base raises ``TypeError``
when the class is made.

Why: before Python 3.13 the standard library compiles six methods from generated source
for every dataclass at import (about 0.7 ms a class on this project's machine; ``unmask
check`` imports some 55 classes). Here nothing is compiled at import. ``__init__``,
``__eq__`` and ``__hash__``, whose speed matters (the IR is built, compared and hashed
through them), are the standard library's very code, made at their first call: an
``__init__`` of plain parameters (most) is one template's code per number of fields with
the names put in (``CodeType.replace``, no compiling), any other method the standard
library's source compiled; ``__repr__`` and the frozen setters, which no hot path calls, are
shared functions closed over the class's field names. The slotted class itself is made here
too (``_slotted``), not by ``dataclass()``, whose field tests were two thirds of what a
class still cost: its fields are the standard library's ``Field`` objects marked with its
own (private) field kinds, which ``fields``, ``replace`` and ``asdict`` read, and the test
above holds them, on the Python the suite runs, to what ``dataclass()`` makes.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import reprlib
import sys
from collections.abc import Callable
from dataclasses import (
    MISSING,
    Field,
    FrozenInstanceError,
    dataclass,
    field,
    fields,
    is_dataclass,
)
from functools import cache
from types import CodeType, FunctionType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # type checkers see a dataclass; nothing is imported at run time
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda f: f


C = TypeVar("C")


class _HasFactory:
    """The parameter default of a field with a default factory, shown as the standard
    library shows it."""

    def __repr__(self) -> str:
        return "<factory>"


_HAS_FACTORY = _HasFactory()


# the parameters every class made here has (frozen, slotted, with the methods): one
# ``@dataclass(frozen=True, slots=True)`` made once gives them as this Python spells them
@dataclass(frozen=True, slots=True)
class _Made:
    pass


_PARAMS = getattr(_Made, "__dataclass_params__")  # noqa: B009 (no annotation names it)


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def frozen(cls: type[C]) -> type[C]:
    """``cls`` as ``@dataclass(frozen=True, slots=True)`` makes it (see the module)."""
    own = cls.__dict__
    if any(is_dataclass(base) for base in cls.__mro__[1:]):
        raise TypeError(f"@frozen class {cls.__qualname__} cannot extend a dataclass")
    for name in ("__setattr__", "__delattr__"):
        if name in own:
            raise TypeError(f"cannot overwrite attribute {name} in class {cls.__name__}")
    if any(
        "InitVar" in str(t) or "KW_ONLY" in str(t) for t in own.get("__annotations__", {}).values()
    ):
        raise TypeError(f"@frozen class {cls.__qualname__} has an InitVar or KW_ONLY field")
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    keep = {
        name
        for name in ("__init__", "__repr__", "__eq__", "__getstate__", "__setstate__")
        if name in own
    }
    made = _slotted(cls)
    every = fields(made)
    if any(f.kw_only is True for f in every):
        raise TypeError(f"@frozen class {made.__qualname__} has a keyword-only field")
    _check_order(every)
    names = frozenset(f.name for f in every)
    methods: dict[str, Callable[..., Any]] = {
        "__init__": _lazy(made, "__init__", _make_init),
        "__repr__": _repr(tuple(f.name for f in every if f.repr)),
        "__eq__": _lazy(made, "__eq__", _compiled("__eq__", _eq_source)),
        "__setattr__": _setattr(made, names),
        "__delattr__": _delattr(made, names),
    }
    if not explicit_hash:
        methods["__hash__"] = _lazy(made, "__hash__", _compiled("__hash__", _hash_source))
    for name, method in methods.items():
        if name not in keep:
            method.__qualname__ = f"{made.__qualname__}.{name}"
            setattr(made, name, method)
    for name, method in (("__getstate__", _getstate), ("__setstate__", _setstate)):
        if name not in keep:
            setattr(made, name, method)
    return made


def _slotted(cls: type) -> type:
    """The slotted class ``dataclass(cls, slots=True)`` makes in the place of ``cls``, with
    its fields and parameters but none of its methods (``frozen`` gives those).

    Why not ``dataclass()`` itself: it tests each text annotation with a pattern and a
    lookup for ``ClassVar`` and ``InitVar`` (an annotation is text under ``from __future__
    import annotations``), which was two thirds of what a class cost at import. Here only a
    text that names ``ClassVar`` is tested so (``InitVar`` is refused before); the fields are
    the standard library's ``Field`` objects, marked as it marks them."""
    own = cls.__dict__
    if "__slots__" in own:
        raise TypeError(f"{cls.__name__} already specifies __slots__")
    made_fields: dict[str, Field] = {}
    for name, tp in own.get("__annotations__", {}).items():
        value = own.get(name, MISSING)
        f: Any = value if isinstance(value, Field) else field(default=value)
        f.name, f.type = name, tp
        if _is_classvar(tp, cls):
            if f.default_factory is not MISSING:
                raise TypeError(f"field {name} cannot have a default factory")
            f._field_type = dataclasses._FIELD_CLASSVAR  # type: ignore[attr-defined]
        else:
            f._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
            if f.default is not MISSING and f.default.__class__.__hash__ is None:
                raise ValueError(
                    f"mutable default {type(f.default)} for field {name} is not allowed: "
                    "use default_factory"
                )
        if f.kw_only is MISSING:
            f.kw_only = False  # type: ignore[assignment]
        made_fields[name] = f
    for name, value in own.items():
        if isinstance(value, Field) and name not in made_fields:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    names = tuple(n for n, f in made_fields.items() if f._field_type is dataclasses._FIELD)  # type: ignore[attr-defined]
    inherited = {s for base in cls.__mro__[1:-1] for s in _slots_of(base)}
    body = dict(own)
    for name, f in made_fields.items():
        if name in names:
            body.pop(name, None)  # a field's default lives in __init__ and in its Field
        elif isinstance(own.get(name), Field):  # a ClassVar given as field(...)
            if f.default is MISSING:
                del body[name]
            else:
                body[name] = f.default
    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    body["__slots__"] = tuple(n for n in names if n not in inherited)
    body["__dataclass_params__"] = _PARAMS
    body["__dataclass_fields__"] = made_fields
    if "__match_args__" not in own:
        body["__match_args__"] = tuple(n for n in names if made_fields[n].init)
    if not own.get("__doc__"):
        body["__doc__"] = cls.__name__ + _signature_text(tuple(made_fields[n] for n in names))
    made = type(cls)(cls.__name__, cls.__bases__, body)
    made.__qualname__ = cls.__qualname__
    if isinstance(made, abc.ABCMeta):
        abc.update_abstractmethods(made)  # type: ignore[arg-type]
    return made


def _is_classvar(tp: Any, cls: type) -> bool:
    if isinstance(tp, str):  # the standard library's own test, only where it can be one
        return "ClassVar" in tp and dataclasses._is_type(  # type: ignore[attr-defined]
            tp,
            cls,
            sys.modules["typing"],
            sys.modules["typing"].ClassVar,
            dataclasses._is_classvar,  # type: ignore[attr-defined]
        )
    return dataclasses._is_classvar(tp, sys.modules["typing"])  # type: ignore[attr-defined]


def _slots_of(base: type) -> tuple[str, ...]:
    slots = base.__dict__.get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(slots)


def _check_order(every: tuple[Field, ...]) -> None:
    seen_default = False
    for f in every:
        if f.init:
            if not (f.default is MISSING and f.default_factory is MISSING):
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")


def _signature_text(every: tuple[Field, ...]) -> str:
    """``str(inspect.signature(cls))`` of the dataclass, without the ``-> None``."""
    out = []
    for f in every:
        if not f.init:
            continue
        text = f"{f.name}: {inspect.formatannotation(f.type)}"
        if f.default is not MISSING:
            text += f" = {f.default!r}"
        elif f.default_factory is not MISSING:
            text += " = <factory>"
        out.append(text)
    return f"({', '.join(out)})"


def _lazy(cls: type, name: str, make: Callable[[type], Any]) -> Any:
    """A method that, at its first call, makes the real one (``make(cls)``) and puts it in
    its place on ``cls``."""

    def first_call(self: Any, *args: Any) -> Any:
        method = make(cls)
        setattr(cls, name, method)
        return method(self, *args)

    if name == "__init__":  # the only one called with keywords

        def first_init(self: Any, *args: Any, **kwargs: Any) -> None:
            method = make(cls)
            setattr(cls, name, method)
            method(self, *args, **kwargs)

        return first_init
    return first_call


def _compiled(name: str, source: Callable[[type], tuple[str, dict[str, Any]]]) -> Any:
    """``make`` for ``_lazy``: compile the method ``source`` gives for the class."""

    def make(cls: type) -> Any:
        text, env = source(cls)
        exec(compile(text, f"<{cls.__qualname__}.{name}>", "exec"), env)
        return _named(cls, name, env[name])

    return make


def _named(cls: type, name: str, method: Any) -> Any:
    method.__qualname__ = f"{cls.__qualname__}.{name}"
    method.__module__ = cls.__module__
    if name == "__init__":  # as the standard library annotates it
        init = [f for f in fields(cls) if f.init]
        method.__annotations__ = {f.name: f.type for f in init} | {"return": None}
    return method


def _make_init(cls: type) -> Any:
    """The class's ``__init__``. When every field is a plain parameter (no factory, no
    ``init=False``, no ``__post_init__``: most classes), it is the code of one template per
    number of fields with the names put in, which compiles nothing; otherwise the
    standard library's source for it, compiled."""
    every = fields(cls)
    names = tuple(f.name for f in every)
    if (
        hasattr(cls, "__post_init__")
        or "self" in names
        or any(not f.init or f.default_factory is not MISSING for f in every)
    ):
        return _compiled("__init__", _init_source)(cls)
    template = _init_template(len(names))
    consts = tuple(
        names[int(c[1:])] if isinstance(c, str) and c[:1] == "f" else c for c in template.co_consts
    )
    code = template.replace(
        co_varnames=("self", *names), co_consts=consts, co_filename=f"<{cls.__qualname__}.__init__>"
    )
    defaults = tuple(f.default for f in every if f.default is not MISSING) or None
    return _named(cls, "__init__", FunctionType(code, _INIT_GLOBALS, "__init__", defaults))


_INIT_GLOBALS: dict[str, Any] = {"__dataclass_builtins_object__": object}


@cache
def _init_template(n: int) -> CodeType:
    """``__init__(self, f0, ..., fN)`` setting each field as the standard library does."""
    params = "".join(f",f{i}" for i in range(n))
    body = "".join(
        f"  __dataclass_builtins_object__.__setattr__(self,'f{i}',f{i})\n" for i in range(n)
    )
    env = dict(_INIT_GLOBALS)
    text = f"def __init__(self{params}):\n" + (body or "  pass\n")
    exec(compile(text, "<init>", "exec"), env)
    return env["__init__"].__code__


def _tuple(obj: str, names: list[str]) -> str:
    return f"({','.join(f'{obj}.{n}' for n in names)},)" if names else "()"


def _init_source(cls: type) -> tuple[str, dict[str, Any]]:
    """The standard library's ``__init__`` of a frozen dataclass (``dataclasses._init_fn``)."""
    every = fields(cls)
    me = "__dataclass_self__" if "self" in {f.name for f in every} else "self"
    env: dict[str, Any] = {
        "__dataclass_builtins_object__": object,
        "_HAS_DEFAULT_FACTORY": _HAS_FACTORY,
    }
    params, body = [me], []
    for f in every:
        default = f"_dflt_{f.name}"
        if f.default_factory is not MISSING:
            env[default] = f.default_factory
            if f.init:
                value = f"{default}() if {f.name} is _HAS_DEFAULT_FACTORY else {f.name}"
            else:
                value = f"{default}()"
        elif f.init:
            value = f.name
        elif f.default is not MISSING:
            env[default] = f.default
            value = default
        else:
            continue
        if f.init:
            if f.default is not MISSING:
                env[default] = f.default
                params.append(f"{f.name}={default}")
            elif f.default_factory is not MISSING:
                params.append(f"{f.name}=_HAS_DEFAULT_FACTORY")
            else:
                params.append(f.name)
        body.append(f"__dataclass_builtins_object__.__setattr__({me},{f.name!r},{value})")
    if hasattr(cls, "__post_init__"):
        body.append(f"{me}.__post_init__()")
    lines = "\n".join(f"  {line}" for line in body or ["pass"])
    return f"def __init__({','.join(params)}):\n{lines}\n", env


def _eq_source(cls: type) -> tuple[str, dict[str, Any]]:
    names = [f.name for f in fields(cls) if f.compare]
    return (
        "def __eq__(self,other):\n"
        "  if other.__class__ is self.__class__:\n"
        f"   return {_tuple('self', names)}=={_tuple('other', names)}\n"
        "  return NotImplemented\n",
        {},
    )


def _hash_source(cls: type) -> tuple[str, dict[str, Any]]:
    names = [f.name for f in fields(cls) if (f.compare if f.hash is None else f.hash)]
    return f"def __hash__(self):\n  return hash({_tuple('self', names)})\n", {}


def _repr(names: tuple[str, ...]) -> Callable[[Any], str]:
    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{self.__class__.__qualname__}({inner})"

    return __repr__


def _setattr(cls: type[object], names: frozenset[str]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    return __setattr__


def _delattr(cls: type[object], names: frozenset[str]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __delattr__


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(fields(self), state, strict=False):
        object.__setattr__(self, f.name, value)
