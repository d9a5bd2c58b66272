"""Where a replay's protocol ``path`` may point.

Contract: ``locate_protocol(text, base_dir, roots)`` returns the file to read for
``{"protocol": {"path": text}}`` in a replay whose own folder is ``base_dir``, or raises
``Refused`` naming the rule that was broken, never anything read from a file. The rules:
the path is relative (resolved against ``base_dir``); it names a ``.proto`` file; and after every
symbolic link is resolved, the file lies inside ``base_dir`` or inside one of ``roots``
(``--protocol-path DIR`` and ``UNMASK_PROTOCOL_PATH``, carried on ``Limits``). Reading the file
(regular files only, bounded) is ``unmask.plumbing.files``'s job. A replay without a file of its own
(stdin, a string given to the library) has the working directory as its folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath

from unmask.plumbing.codes import Code
from unmask.plumbing.jsonreader import show

PROTOCOL_PATH_ENV = "UNMASK_PROTOCOL_PATH"
PROTOCOL_SUFFIX = ".proto"
ALLOW_HELP = (
    f"keep the `.proto` file in the replay's folder, or allow its folder with "
    f"`--protocol-path DIR` or the environment variable `{PROTOCOL_PATH_ENV}`"
)


class Refused(Exception):
    """A protocol path the rules do not allow; ``message`` names the rule."""

    def __init__(self, code: Code, message: str, help: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.help = help


def env_roots(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """The folders named by ``UNMASK_PROTOCOL_PATH`` (``os.pathsep``-separated)."""
    return tuple(p for p in environ.get(PROTOCOL_PATH_ENV, "").split(os.pathsep) if p)


def real_roots(dirs: Iterable[str | Path]) -> tuple[str, ...]:
    """Each folder with its symbolic links resolved, in order, without repeats."""
    return tuple(dict.fromkeys(os.path.realpath(d) for d in dirs))


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def locate_protocol(text: str, base_dir: Path | None, roots: Iterable[str] = ()) -> tuple[str, str]:
    """(the real path to read, the name to show) for a protocol ``path``, or ``Refused``."""
    shown = show(text, 200)
    if "\x00" in text:
        raise Refused(Code.PROTOCOL_FILE, f"the protocol path `{shown}` contains a NUL character")
    if PurePath(text).anchor:
        raise Refused(
            Code.PROTOCOL_PATH,
            f"the protocol path `{shown}` is absolute, not relative to the replay's folder",
            help=ALLOW_HELP,
        )
    if not text.endswith(PROTOCOL_SUFFIX):
        hint = (
            f"a protocol `path` names a `{PROTOCOL_SUFFIX}` file written in the protocol language"
        )
        if text.endswith(".json"):  # the compiled IR: it is embedded, never named
            hint = (
                f"{hint}; compiled protocol IR (what `unmaskc` writes) is embedded instead: "
                'write its JSON object as the value of `"protocol"`'
            )
        raise Refused(
            Code.PROTOCOL_PATH,
            f"the protocol path `{shown}` does not name a `{PROTOCOL_SUFFIX}` file",
            help=hint,
        )
    folder = Path.cwd() if base_dir is None else base_dir
    name = text if base_dir is None else str(base_dir / text)
    real = os.path.realpath(folder / text)
    allowed = real_roots([folder, *roots])
    if not any(_inside(real, root) for root in allowed):
        raise Refused(
            Code.PROTOCOL_PATH,
            f"the protocol path `{shown}` leads outside the replay's folder"
            + (" and the allowed folders" if len(allowed) > 1 else ""),
            help=ALLOW_HELP,
        )
    if not real.endswith(PROTOCOL_SUFFIX):
        raise Refused(
            Code.PROTOCOL_PATH,
            f"the protocol path `{shown}` is a link to a file that is not a "
            f"`{PROTOCOL_SUFFIX}` file",
        )
    return real, name


def embed_protocol(obj: dict, base: Path, out_dir: Path, roots: Iterable[str] = ()) -> None:
    """Embed the protocol a replay document names by path (``{"source": TEXT}``) when it is
    written to another folder than ``base``, so the written replay stands alone; ``Refused``
    when the path no longer leads where a replay's protocol may be."""
    from unmask.plumbing.files import read_text

    protocol = obj.get("protocol")
    if out_dir.resolve() == base.resolve() or not isinstance(protocol, dict):
        return
    if "path" not in protocol:
        return
    real, _ = locate_protocol(protocol["path"], base, roots)
    obj["protocol"] = {"source": read_text(Path(real))}
