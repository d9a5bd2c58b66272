"""Loading and validating replays: the envelope, and the protocol it names.

Contract: ``load_replay``, ``load_replay_text`` and ``replay_from_obj`` return a
``unmask.replay.data.Replay`` only for input that passes every validation rule, and otherwise raise
``UnmaskError`` carrying *every* problem found, each a ``Diagnostic`` with a stable ``code``, the
JSON ``path`` of the offending value and the ``file`` it is in (compile errors of a ``.proto`` keep
their file:line:col spans). The parts have their own modules: the bounded JSON parser
(``unmask.plumbing.jsonload``), the format as typed structs (``unmask.replay.format``, read
through ``unmask.plumbing.structs``: every key, type and unknown key is said there), the
protocol IR (``unmask.ir.json_reader``, whose ``protocol_from_json`` is re-exported here),
annotations and evidence spans (``unmask.replay.evidence``), and where a protocol ``path`` may lead
(``unmask.replay.confine``). This module checks what the structs cannot say about the
envelope (the schema's hint, empty ``item``/``judge``, ``domains`` members, a translation
status, a source's length, labels) and loads the protocol in its three forms (a ``.proto`` text
through ``unmask.language.compile_cache.compile_cached``: once per process, and on disk, for the
same text, file, domains and limits; embedded IR once per process for the same JSON and limits, when
reading it found nothing to say); ``verdict`` and ``gold`` must be labels the protocol declares
(``PASS``/``FAIL`` without a ``verdict`` statement). With a ``ProtocolFile`` (``--protocol``,
``unmask.replay.recheck``) the replay is read against that protocol instead of its own, whose
``protocol`` is then not read: it is ground with the replay's members of the domains it declares
(the others are ignored, with a warning), an annotation for an atom it lacks is left out with an
``atom-dropped`` warning and listed on ``Replay.recheck`` (never dropped silently; the structured
importer's ``quotes_verbatim`` keeps its requirement, ``unmask.replay.recheck``), and a verdict or
gold label it does not declare is an error. A replay's own folder is the folder of its file; for
text without a file (stdin) it is the working directory. Warnings (unknown keys, ignored
``domains``) never fail validation; they travel on ``Replay.warnings``. An error raised here has a
``sources`` attribute (file name -> text) so that ``render_error`` can show compile errors with the
offending line.
"""

from __future__ import annotations

import marshal
import os
import threading
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from unmask import ir
from unmask.ir.format import PROTOCOL_SCHEMA
from unmask.ir.json_reader import (
    ATOM_NAME_RE,
    IDENT_RE,
    OPS,
    PROTOCOL_KEYS,
    IrReader,
    protocol_from_json,
)
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import UnmaskError, render_all
from unmask.plumbing.files import read_text
from unmask.plumbing.jsonload import parse_json_text
from unmask.plumbing.jsonreader import JsonReader, did_you_mean, index_path, join_path, kind, show
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.names import member_help
from unmask.plumbing.structs import UNSET, UnsetType, field_names
from unmask.replay.confine import Refused, locate_protocol
from unmask.replay.data import SOURCES, VERDICTS, Replay
from unmask.replay.evidence import read_annotations
from unmask.replay.format import (
    REPLAY_SCHEMA,
    TRANSLATION_STATUSES,
    ProtocolPath,
    ProtocolSource,
    ProvenanceJson,
    ReplayJson,
    SourcesJson,
    TranslationJson,
)
from unmask.replay.replayfile import read_replay_json

if TYPE_CHECKING:  # a replay read against a protocol file is given one; reading never makes one
    from unmask.replay.recheck import ProtocolFile

__all__ = [
    "ATOM_NAME_RE",
    "IDENT_RE",
    "OPS",
    "PROTOCOL_KEYS",
    "REPLAY_KEYS",
    "REPLAY_SCHEMA",
    "TRANSLATION_STATUSES",
    "load_replay",
    "load_replay_text",
    "protocol_from_json",
    "render_error",
    "replay_from_obj",
]

REPLAY_KEYS = field_names(ReplayJson)
# A batch embeds the same protocol in every replay: the last few are kept, keyed by their
# JSON (as marshal bytes) and the limits they were read under
EMBEDDED_SIZE = 8
EMBEDDED_MAX_BYTES = 8 << 20  # one protocol's (20,000 claims: 6.5 MB)
EMBEDDED_BUDGET_BYTES = 16 << 20  # all of them: a few large protocols, not eight
_EMBEDDED: OrderedDict[tuple[Limits, bytes], ir.Protocol] = OrderedDict()
_EMBEDDED_LOCK = threading.Lock()  # a Dask worker may run replays in several threads
_FORMS_HELP = (
    'embed protocol IR (`"schema": "unmask.protocol/1"`), or write '
    '`{"path": "FILE.proto"}` or `{"source": "protocol …"}`'
)


S = TypeVar("S", bound=msgspec.Struct)


def _convert(obj: dict, cls: type[S]) -> S | None:
    """``obj`` read into the format's struct ``cls`` when it fits exactly (every type
    right, no unknown key), else None."""
    try:
        return msgspec.convert(obj, cls)
    # a lone surrogate, which JSON may escape, cannot be matched against a `Literal`
    except (msgspec.ValidationError, UnicodeEncodeError):
        return None


def _read(r: JsonReader, obj: dict, cls: type[S], path: str) -> S:
    """``obj`` read into ``cls``: at once when it fits (``_convert``), else by
    ``StructReader``, which words every problem into ``r`` and is imported only then (a
    replay that fits never loads it)."""
    got = _convert(obj, cls)
    if got is not None:
        return got
    from unmask.plumbing.struct_reader import StructReader

    return StructReader(r).struct(obj, cls, path)


def _structured_verbatim(annotations: Any) -> bool:
    """Whether `unmask import structured` annotated the replay's `quotes_verbatim` (its
    rule's name on the annotation): a re-check keeps that requirement (``ProtocolFile``)."""
    # here, not at import: only a re-check asks, and a plain `check` need not load the module
    from unmask.replay.judgeschema import VERBATIM_ATOM, VERBATIM_RULE

    return isinstance(annotations, list) and any(
        getattr(a, "atom", None) == VERBATIM_ATOM
        and isinstance(getattr(a, "by", None), ProvenanceJson)
        and a.by.kind == "rule"
        and a.by.name == VERBATIM_RULE
        for a in annotations
    )


class _ReplayReader:
    """Checks one replay, read into the format's structs, for what the structs cannot say;
    every problem goes into ``r``."""

    def __init__(self, r: JsonReader, base_dir: Path | None, against: ProtocolFile | None = None):
        self.r = r
        self.ir = IrReader(r)
        self.base_dir = base_dir
        self.bad_sources: set[str] = set()  # given but rejected: no echo errors for them
        self.bad_domains: set[str] = set()  # the same for domains whose members are no array
        self.against = against  # `--protocol`: checked against it, not the replay's own

    def replay(self, obj: Any, text: str | None = None, line: int | None = None) -> Replay | None:
        """The replay, or None after recording why not; ``text`` and ``line`` are kept on it
        (see ``replay_from_obj``)."""
        r = self.r
        if not isinstance(obj, dict):
            r.err(Code.TYPE, "$", f"expected a replay object at the top level, found {kind(obj)}")
            return None
        if not self._schema(obj):
            return None
        # a field the slow way found missing or ill-typed is None: reported, and skipped
        doc = _read(r, obj, ReplayJson, "")
        rid = doc.id
        item = self._label_text(doc.item, Code.ITEM, "what was judged")
        judge = self._label_text(doc.judge, Code.JUDGE, "which judge or run judged it")
        domains = self._domains(doc.domains)
        if self.against is None:
            protocol = self._protocol(doc.protocol, domains)
        else:
            verbatim = _structured_verbatim(doc.annotations)
            protocol = self._against(doc.protocol, self.against, domains, verbatim)
        translation = self._translation(doc.translation)
        sources = self._sources(doc.sources)
        labels = None if protocol is None else protocol.labels
        verdict = self._verdict(doc.verdict, Code.VERDICT, labels, required=True)
        gold = self._verdict(doc.gold, Code.GOLD, labels, required=False)
        lacking: list[str] | None = None if self.against is None else []
        annotations = read_annotations(
            r, doc.annotations, protocol, sources, self.bad_sources, lacking
        )
        if r.diags or rid is None or protocol is None or verdict is None:
            return None
        recheck = None if self.against is None else self.against.recheck(lacking or ())
        return Replay(
            id=rid,
            protocol=protocol,
            verdict=verdict,
            annotations=annotations,
            sources=MappingProxyType(dict(sources)),
            translation=translation,
            gold=gold,
            domains=MappingProxyType(domains),
            file=r.file,
            item=item,
            judge=judge,
            warnings=tuple(r.warnings),
            json_text=text,
            json_line=(line or 1) if text is not None else 1,
            recheck=recheck,
        )

    def _label_text(self, v: Any, key: Code, what: str) -> str | None:
        """``item`` or ``judge``: absent, or a string that is not empty."""
        if v is UNSET or v is None:
            return None
        if v == "":
            self.r.err(key, key, f"`{key}` is empty", help=f"`{key}` names {what}; or leave it out")
            return None
        return v

    def _schema(self, obj: dict) -> bool:
        """False when the document is of another schema: nothing else is worth reading."""
        if "schema" not in obj:
            self.r.err(
                Code.SCHEMA,
                "$",
                f"missing `schema`, expected `{REPLAY_SCHEMA}`",
                help=f'add `"schema": "{REPLAY_SCHEMA}"`',
            )
            return True
        schema = obj["schema"]
        if schema == REPLAY_SCHEMA:
            return True
        hint = None
        if schema == PROTOCOL_SCHEMA:
            hint = "this is protocol IR; a replay embeds it under `protocol`"
        self.r.err(
            Code.SCHEMA,
            "schema",
            f"unsupported schema `{show(schema)}`, expected `{REPLAY_SCHEMA}`",
            help=hint,
        )
        return False

    def _translation(self, t: TranslationJson | UnsetType | None) -> str:
        if t is UNSET or t is None or t.status is UNSET or t.status is None:
            return "valid"
        st = t.status
        if st not in TRANSLATION_STATUSES:
            self.r.err(
                Code.TRANSLATION,
                "translation.status",
                f"unknown translation status `{show(st)}`",
                help="a status is `valid`, `partial` or `invalid`",
            )
            return "valid"
        return st

    def _domains(self, d: Any) -> dict[str, tuple[str, ...]]:
        """``domains`` as parsed (``UNSET`` when absent): each member is checked as it comes."""
        r = self.r
        out: dict[str, tuple[str, ...]] = {}
        if d is UNSET or d is None:
            return out
        if not isinstance(d, dict):
            r.expect("domains", "an object mapping each domain to its members", d)
            return out
        for dn, members in d.items():
            p = join_path("domains", dn)
            if not IDENT_RE.match(dn):
                r.err(Code.NAME, p, f"`{show(dn)}` is not a valid domain name")
                continue
            if not isinstance(members, list):
                shown = "[…]"
                if isinstance(members, str):  # `"a,b"`, as `--domain claim=a,b` writes them
                    names = [m.strip() for m in members.split(",") if m.strip()][:4]
                    shown = "[" + ", ".join(msgspec.json.encode(n).decode() for n in names) + "]"
                r.err(
                    Code.TYPE,
                    p,
                    f"expected an array of member names, found {kind(members)}",
                    help=f"write them as a JSON array: `{show(shown, 80)}`",
                )
                self.bad_domains.add(dn)
                continue
            if len(members) > r.limits.max_domain_size:
                r.limit(p, f"the size of domain `{dn}`", len(members), "max_domain_size")
                continue
            seen: dict[str, int] = {}
            for i, m in enumerate(members):
                mp = index_path(p, i)
                if not isinstance(m, str):
                    r.expect(mp, "a member name (a string)", m)
                elif not IDENT_RE.match(m):
                    r.err(
                        Code.NAME,
                        mp,
                        f"`{show(m)}` is not a valid member name",
                        help=member_help(m),
                    )
                elif m in seen:
                    r.err(
                        Code.DOMAIN,
                        mp,
                        f"member `{m}` occurs twice in domain `{dn}`",
                        notes=(f"the first is `{index_path(p, seen[m])}`",),
                    )
                else:
                    seen[m] = i
            # the members that are fine still ground the protocol: a bad member is reported
            # once, here, not again as a domain the protocol finds without members
            out[dn] = tuple(seen)
        return out

    # --- the protocol, in three forms -------------------------------------------------------

    def _protocol(self, p: Any, domains: dict[str, tuple[str, ...]]) -> ir.Protocol | None:
        """``protocol`` as parsed (``UNSET`` when absent): its three forms have their own
        messages, and embedded IR its own reader."""
        r = self.r
        if p is UNSET:
            r.err(Code.MISSING, "$", "missing `protocol`")
            return None
        if not isinstance(p, dict):
            r.err(
                Code.PROTOCOL_FORM,
                "protocol",
                f"expected a protocol object, found {kind(p)}",
                help=_FORMS_HELP,
            )
            return None
        forms = [k for k in ("path", "source") if k in p]
        if "schema" in p or not forms:
            if forms:
                r.err(
                    Code.PROTOCOL_FORM,
                    "protocol",
                    f"a protocol is either embedded IR or `{forms[0]}`, not both",
                    help=_FORMS_HELP,
                )
                return None
            if "schema" not in p and "atoms" not in p:
                r.err(Code.PROTOCOL_FORM, "protocol", "expected a protocol", help=_FORMS_HELP)
                return None
            if domains:
                r.warn(
                    Code.DOMAINS_IGNORED,
                    "domains",
                    "`domains` is ignored: an embedded protocol is already ground",
                )
            return self._embedded(p)
        if len(forms) == 2:
            r.err(
                Code.PROTOCOL_FORM,
                "protocol",
                "a protocol has `path` or `source`, not both",
                help=_FORMS_HELP,
            )
            return None
        form = forms[0]
        if form == "path":
            value = _read(r, p, ProtocolPath, "protocol").path
        else:
            value = _read(r, p, ProtocolSource, "protocol").source
        if value is None:
            return None
        fp = join_path("protocol", form)
        if form == "path":
            read = self._protocol_file(value, fp)
            if read is None:
                return None
            filename, text = read
        else:
            filename, text = (f"{r.file}: {fp}" if r.file else fp), value
        if len(text) > r.limits.max_source_chars:
            r.limit(fp, "the protocol's length in characters", len(text), "max_source_chars")
            return None
        r.sources[filename] = text
        return self._compile(text, filename, domains, fp)

    def _against(
        self,
        p: Any,
        against: ProtocolFile,
        domains: dict[str, tuple[str, ...]],
        verbatim: bool = False,
    ) -> ir.Protocol | None:
        """The protocol of ``--protocol``, ground with the replay's members; the replay's
        own ``protocol`` must be there but is not read: a re-check replaces it. ``verbatim``:
        the structured importer annotated `quotes_verbatim`, so its requirement is kept."""
        r = self.r
        if p is UNSET:
            r.err(Code.MISSING, "$", "missing `protocol`")
            return None
        if against.ground_already:
            if domains:
                r.warn(
                    Code.DOMAINS_IGNORED,
                    "domains",
                    f"`domains` is ignored: protocol `{against.name}` is already ground",
                )
            domains = {}
        else:
            for name in domains:
                if name not in against.domains:
                    r.warn(
                        Code.DOMAINS_IGNORED,
                        join_path("domains", name),
                        f"domain `{name}` is ignored: protocol `{against.name}` does not "
                        "declare it",
                        help="its members name no atom of this protocol",
                    )
            domains = {k: v for k, v in domains.items() if k in against.domains}
        try:
            protocol = against.ground(domains, r.limits, verbatim)
        except UnmaskError as exc:
            r.sources[against.path] = (verbatim and against.verbatim) or against.text
            r.diags.extend(
                replace(d, file=r.file) if d.span is None and d.file is None else d
                for d in exc.diagnostics
            )
            return None
        except RecursionError:  # only when --max-expr-depth was raised past the compiler
            r.err(Code.LIMIT, "protocol", "the protocol nests too deeply to compile")
            return None
        return protocol

    def _embedded(self, p: dict) -> ir.Protocol | None:
        """Embedded protocol IR, read once per process for the same JSON and limits."""
        r = self.r
        try:
            # marshal tells `true` from `1` and `1.0`, which `==` does not; the bytes
            # determine the value, so equal keys are the same JSON
            key = (r.limits, marshal.dumps(p, 2))
        except ValueError:  # not plain JSON values (a duplicate key): read it, report it
            return self.ir.protocol(p, "protocol")
        with _EMBEDDED_LOCK:
            got = _EMBEDDED.get(key)
            if got is not None:
                _EMBEDDED.move_to_end(key)
                return got
        before = (len(r.diags), len(r.warnings))
        read = self.ir.protocol(p, "protocol")
        # only a clean read is kept: a hit must add no error and no warning either
        clean = read is not None and (len(r.diags), len(r.warnings)) == before
        if clean and len(key[1]) <= EMBEDDED_MAX_BYTES:
            with _EMBEDDED_LOCK:
                _EMBEDDED[key] = read  # type: ignore[assignment]
                while len(_EMBEDDED) > EMBEDDED_SIZE or (
                    len(_EMBEDDED) > 1 and sum(len(k[1]) for k in _EMBEDDED) > EMBEDDED_BUDGET_BYTES
                ):
                    _EMBEDDED.popitem(last=False)
        return read

    def _protocol_file(self, path: str, fp: str) -> tuple[str, str] | None:
        """(file name, text) of a protocol ``path``, confined to the allowed folders."""
        r = self.r
        try:
            real, filename = locate_protocol(path, self.base_dir, r.limits.protocol_path)
        except Refused as no:
            r.err(no.code, fp, no.message, help=no.help)
            return None
        try:
            # `real` has every link resolved: a link found there now was swapped in since
            # the check, and is refused rather than followed
            return filename, read_text(real, r.limits, name=show(filename, 200), follow=False)
        except UnmaskError as exc:
            for d in exc.diagnostics:
                code = Code.PROTOCOL_FILE if d.code == Code.IO else d.code
                # a file that is not there: the one beside it, as the replay writes it
                gone = d.code == Code.IO and not os.path.lexists(real)
                help_ = _near_protocol(real, path) if gone else d.help or _PATH_HELP
                r.diags.append(replace(d, code=code, path=fp, file=r.file, help=help_))
            return None

    def _compile(
        self, text: str, filename: str, domains: dict[str, tuple[str, ...]], fp: str
    ) -> ir.Protocol | None:
        from unmask.language.compile_cache import compile_cached

        r = self.r
        try:
            return compile_cached(text, filename, domains, r.limits)
        except UnmaskError as exc:
            from unmask.language.compile_base import missing_domain

            for d in exc.diagnostics:
                # a diagnostic about `domains` has a JSON path but no file: it is this replay's
                if d.span is None and d.file is None:
                    d = replace(d, file=r.file)
                domain = missing_domain(d)
                if domain in self.bad_domains:  # its members were given, and refused above
                    continue
                if domain is not None:  # the members of a replay come from its `domains`
                    given = f'"domains": {{"{domain}": ["a", "b"]}}'
                    d = replace(d, help=f"add its members to the replay: `{given}`")
                r.diags.append(d)
            return None
        except RecursionError:  # only when --max-expr-depth was raised past the compiler
            r.err(
                Code.LIMIT,
                fp,
                "the protocol nests too deeply to compile",
                help=f"lower `{r.limits.option('max_expr_depth')}`",
            )
            return None

    # --- texts and verdicts -------------------------------------------------------------------

    def _sources(self, s: SourcesJson | None) -> dict[str, str]:
        """The source texts that are fine; a source given but rejected (ill-typed, reported
        as read, or too long) goes into ``bad_sources``."""
        r = self.r
        out: dict[str, str] = {}
        if s is None:
            return out
        for k in SOURCES:
            v = getattr(s, k)
            if v is UNSET:
                continue
            if v is None or len(v) > r.limits.max_source_chars:
                self.bad_sources.add(k)
                if v is not None:
                    p = join_path("sources", k)
                    what = f"the length of source `{k}` in characters"
                    r.limit(p, what, len(v), "max_source_chars")
                continue
            out[k] = v
        return out

    def _verdict(
        self, v: Any, key: Code, labels: tuple[str, ...] | None, required: bool
    ) -> str | None:
        """``verdict`` or ``gold`` as parsed (``UNSET`` when absent): one of ``labels``
        (None: the protocol could not be read, so any string passes here)."""
        r = self.r
        if v is UNSET or (not required and v is None):
            if required:
                r.err(Code.MISSING, "$", f"missing `{key}`", help=_write_one_of(labels))
            return None
        if isinstance(v, str) and (labels is None or v in labels):
            return v
        what = "the verdict" if required else "the gold label"
        found = f"`{show(v)}`" if isinstance(v, str) else kind(v)
        if labels is None:
            message = f"{what} must be a label (a string), found {found}"
        elif labels == VERDICTS:
            message = f"{what} must be {_one_of(labels)}, found {found}"
        else:
            message = (
                f"{what} must be a label of the protocol: expected {_one_of(labels)}, found {found}"
            )
        hint = _write_one_of(labels) + ("" if required else ", or null when there is none")
        if isinstance(v, str) and labels:
            same = [lab for lab in labels if lab.casefold() == v.casefold()]
            if same:
                hint = f"write `{same[0]}`" + (" in capitals" if same[0] == v.upper() else "")
            else:
                hint = did_you_mean(v, labels) or hint
        notes: tuple[str, ...] = ()
        if self.against is not None and labels is not None:
            # the replay was judged under another version: its label is no typo to fix
            message = (
                f"{what} `{show(v)}` is not a label of protocol `{self.against.name}`, "
                f"the protocol of `--protocol`: expected {_one_of(labels)}"
            )
            hint = (
                "`unmask compare OLD NEW` shows how the labels changed; "
                "re-check against a version that declares this label"
            )
            notes = (f"checked against `{self.against.path}`, not the replay's own protocol",)
        r.err(key, key, message, help=hint, notes=notes)
        return None


_PATH_HELP = "`path` is relative to the replay file"


def _near_protocol(real: str, written: str) -> str:
    """The help of a protocol ``path`` that leads to no file: the `.proto` file beside it
    with the closest name, as the replay would write it (`did you mean `claims.proto`?`),
    when there is one."""
    from pathlib import PurePath

    from unmask.plumbing.files import near_name

    missing = Path(real)
    close = near_name(missing.parent, missing.name, ".proto")
    if close is None:
        return _PATH_HELP
    meant = PurePath(written).with_name(close).as_posix()
    return f"did you mean `{show(meant, 200)}`? {_PATH_HELP}"


def _one_of(labels: tuple[str, ...]) -> str:
    names = [f"`{lab}`" for lab in labels]
    if len(names) == 2:
        return " or ".join(names)
    return "one of " + ", ".join(names)


def _write_one_of(labels: tuple[str, ...] | None) -> str:
    return (
        "write the label as the protocol declares it"
        if labels is None
        else ("write " + _one_of(labels))
    )


# --- public API -------------------------------------------------------------------------------


def replay_from_obj(
    obj: Any,
    file: str | None = None,
    base_dir: str | Path | None = None,
    limits: Limits = DEFAULT_LIMITS,
    line: int | None = None,
    text: str | None = None,
    protocol: ProtocolFile | None = None,
) -> Replay:
    """Validate an already parsed replay; ``line`` (JSON Lines) is shown as ``FILE:LINE``.

    ``base_dir`` is the replay's own folder, where a protocol ``path`` starts and may lead;
    None means the working directory. ``text``, the JSON the object was parsed from, is
    kept on the replay (with ``line``) so reports can point into it without a file.
    ``protocol`` (``--protocol``) replaces the replay's own: see the module.
    """
    label = f"{file or '<input>'}:{line}" if line is not None else file
    r = JsonReader(label, limits)
    reader = _ReplayReader(r, Path(base_dir) if base_dir is not None else None, protocol)
    out = reader.replay(obj, text, line)
    if out is None or r.diags:
        if not r.diags:  # cannot happen: every None path records an error; stay loud anyway
            r.err(Code.INVALID, "$", "the replay is invalid")
        raise r.failure()
    return out


def load_replay_text(
    text: str,
    file: str | None = None,
    base_dir: str | Path | None = None,
    limits: Limits = DEFAULT_LIMITS,
    protocol: ProtocolFile | None = None,
) -> Replay:
    obj = parse_json_text(text, file, limits)
    return replay_from_obj(obj, file, base_dir, limits, text=text, protocol=protocol)


def load_replay(
    path: str | Path, limits: Limits = DEFAULT_LIMITS, protocol: ProtocolFile | None = None
) -> Replay:
    obj = read_replay_json(path, limits)
    return replay_from_obj(obj, str(path), Path(path).parent, limits, protocol=protocol)


def render_error(err: UnmaskError) -> str:
    """All diagnostics of ``err``, with source excerpts where the error carries them."""
    return render_all(err.diagnostics, getattr(err, "sources", None))
