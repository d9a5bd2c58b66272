"""Loading and validating replays and protocol IR (SPEC section 3).

Contract: ``load_replay``, ``load_replay_text`` and ``replay_from_obj`` return a
``unmask.model.Replay`` only for input that passes every validation rule, and otherwise raise
``UnmaskError`` carrying *every* problem found, each a ``Diagnostic`` with a stable ``code``,
the JSON ``path`` of the offending value and the ``file`` it is in (compile errors of a
``.proto`` keep their file:line:col spans). ``protocol_from_json`` does the same for the
``unmask.protocol/1`` IR alone. Nothing here recurses on input depth: JSON nesting is bounded
before parsing and expressions are read with an explicit stack, so no input ends in a
traceback. Warnings (unknown keys, ignored ``domains``) never fail validation; they travel
on ``Replay.warnings``. An error raised here has a ``sources`` attribute (file name -> text)
so that ``render_error`` can show compile errors with the offending line.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from unmask import ir
from unmask.diagnostics import Diagnostic, UnmaskError, render_all
from unmask.irjson import PROTOCOL_SCHEMA
from unmask.jsonload import join_path, parse_json_text, read_json_file, show
from unmask.limits import DEFAULT_LIMITS, Limits
from unmask.model import EVIDENCE_SOURCES, SOURCES, VALUES, VERDICTS, Annotation, Evidence, Replay

REPLAY_SCHEMA = "unmask.replay/1"
TRANSLATION_STATUSES = ("valid", "partial", "invalid")
OPS = ("not", *ir.NARY_OPS, *ir.BINARY_OPS, *ir.CARD_OPS)

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
IDENT_RE = re.compile(_IDENT + r"\Z")
# a ground atom is a plain name or a family member such as `supported(c)`
ATOM_NAME_RE = re.compile(rf"{_IDENT}(\(\s*{_IDENT}(\s*,\s*{_IDENT})*\s*\))?\Z")

REPLAY_KEYS = (
    "schema",
    "id",
    "protocol",
    "domains",
    "translation",
    "sources",
    "verdict",
    "gold",
    "annotations",
)
PROTOCOL_KEYS = (
    "schema",
    "name",
    "text",
    "atoms",
    "constraints",
    "decision",
    "requirements",
    "grounding",
)
_SUGGEST_MAX = 5000  # above this many candidates, "did you mean" is not worth its cost


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "`true`" if v else "`false`"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return "an unsupported value"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _idx(path: str, i: int) -> str:
    return f"{path}[{i}]"


class _Validator:
    """Collects diagnostics while turning parsed JSON into validated IR and replays."""

    def __init__(self, file: str | None, limits: Limits):
        self.file = file
        self.limits = limits
        self.diags: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []
        self.sources: dict[str, str] = {}
        self.nodes = 0
        self.nodes_exceeded = False
        self.bad_sources: set[str] = set()  # given but rejected: no echo errors for them

    # --- reporting -------------------------------------------------------------------------

    def err(
        self,
        code: str,
        path: str,
        message: str,
        help: str | None = None,
        notes: tuple[str, ...] = (),
    ) -> None:
        self.diags.append(
            Diagnostic(code, message, path=path or "$", file=self.file, help=help, notes=notes)
        )

    def warn(self, code: str, path: str, message: str, help: str | None = None) -> None:
        self.warnings.append(
            Diagnostic(
                code, message, path=path or "$", file=self.file, help=help, severity="warning"
            )
        )

    def limit(self, path: str, what: str, seen: int, field: str) -> None:
        bound = getattr(self.limits, field)
        self.err(
            "limit",
            path,
            f"{what} is {seen}; the limit is {bound}",
            help=f"raise the bound with `{self.limits.option(field)}`",
        )

    def expect(self, path: str, what: str, v: Any) -> None:
        self.err("type", path, f"expected {what}, found {_kind(v)}")

    def unknown_keys(self, obj: dict, path: str, known: tuple[str, ...], what: str) -> None:
        for k in obj:
            if k not in known:
                self.warn(
                    "unknown-key",
                    join_path(path, k),
                    f"unknown key `{show(k)}` in {what} is ignored",
                    help=_did_you_mean(k, known),
                )

    def string(self, obj: dict, key: str, path: str, required: bool = True) -> str | None:
        if key not in obj:
            if required:
                self.err("missing", path, f"missing `{key}`")
            return None
        v = obj[key]
        if not isinstance(v, str):
            self.expect(join_path(path, key), "a string", v)
            return None
        return v

    def name(self, obj: dict, key: str, path: str, pattern: re.Pattern[str]) -> str | None:
        v = self.string(obj, key, path)
        if v is not None and not pattern.match(v):
            self.err(
                "name",
                join_path(path, key),
                f"`{show(v)}` is not a valid name",
                help="names are letters, digits and `_`, not starting with a digit",
            )
            return None
        return v

    def array(self, obj: dict, key: str, path: str, required: bool = True) -> list | None:
        if key not in obj:
            if required:
                self.err("missing", path, f"missing `{key}`")
            return None if required else []
        v = obj[key]
        if not isinstance(v, list):
            self.expect(join_path(path, key), "an array", v)
            return None
        return v

    # --- expressions -------------------------------------------------------------------------

    def expr(self, obj: Any, path: str, atoms: Mapping[str, Any] | None) -> ir.Expr | None:
        """Parse one expression with an explicit stack; ``None`` after any error in it.

        ``atoms`` is None when the protocol's atoms could not be read: names are then not
        checked, so one broken declaration does not bury the real errors under echoes.
        """
        if self.nodes_exceeded:
            return None
        errors_before = len(self.diags)
        out: list[ir.Expr | None] = []
        # (json, path, depth) to read; or (None, op, k, n) to build from the last n results
        work: list[tuple] = [(obj, path, 1)]
        too_deep = False
        while work:
            item = work.pop()
            if len(item) == 4:
                _, op, k, n = item
                args = out[len(out) - n :] if n else []
                del out[len(out) - n :]
                out.append(_build(op, k, args))
                continue
            node, p, d = item
            self.nodes += 1
            if self.nodes > self.limits.max_expr_nodes:
                self.nodes_exceeded = True
                self.limit(p, "the number of expression nodes", self.nodes, "max_expr_nodes")
                return None
            if d > self.limits.max_expr_depth:
                if not too_deep:
                    too_deep = True
                    self.limit(p, "the expression's depth", d, "max_expr_depth")
                out.append(None)
                continue
            read = self._expr_node(node, p, atoms)
            if read is None:
                out.append(None)
            elif isinstance(read, tuple):
                op, k, args = read
                work.append((None, op, k, len(args)))
                for i in range(len(args) - 1, -1, -1):
                    work.append((args[i], f"{p}.args[{i}]", d + 1))
            else:
                out.append(read)
        if len(self.diags) > errors_before:
            return None
        return out[0]

    def _expr_node(
        self, node: Any, p: str, atoms: Mapping[str, Any] | None
    ) -> ir.Expr | tuple[str, int, list] | None:
        """A leaf expression, or (op, k, args) for an operator whose args are still JSON."""
        if not isinstance(node, dict):
            self.err(
                "expr",
                p,
                f"expected an expression object, found {_kind(node)}",
                help='write `{"atom": NAME}`, `{"const": true}` or `{"op": OP, "args": [...]}`',
            )
            return None
        forms = [k for k in ("atom", "const", "op") if k in node]
        if len(forms) != 1:
            self.err(
                "expr",
                p,
                "an expression has exactly one of `atom`, `const` and `op`"
                + (f"; this one has {', '.join(f'`{f}`' for f in forms)}" if forms else ""),
                help='write `{"atom": NAME}`, `{"const": true}` or `{"op": OP, "args": [...]}`',
            )
            return None
        form = forms[0]
        allowed = {"atom": ("atom",), "const": ("const",), "op": ("op", "args", "k")}[form]
        bad = False
        for key in node:
            if key not in allowed:
                self.err(
                    "expr", join_path(p, key), f"unexpected key `{show(key)}` in an expression"
                )
                bad = True
        if form == "atom":
            name = node["atom"]
            if not isinstance(name, str):
                self.expect(join_path(p, "atom"), "an atom name (a string)", name)
                return None
            if atoms is not None and name not in atoms:
                self.err(
                    "unknown-atom",
                    join_path(p, "atom"),
                    f"unknown atom `{show(name)}`",
                    help=_did_you_mean(name, atoms),
                )
                return None
            return None if bad else ir.mk_atom(name)
        if form == "const":
            v = node["const"]
            if not isinstance(v, bool):
                self.expect(join_path(p, "const"), "`true` or `false`", v)
                return None
            return None if bad else ir.mk_const(v)
        op = node["op"]
        if not isinstance(op, str) or op not in OPS:
            self.err(
                "expr",
                join_path(p, "op"),
                f"unknown operator `{show(op)}`",
                help=(_did_you_mean(op, OPS) if isinstance(op, str) else None)
                or f"operators are {', '.join(f'`{o}`' for o in OPS)}",
            )
            return None
        if "args" not in node:
            self.err("missing", p, f"missing `args` of `{op}`")
            return None
        args = node["args"]
        if not isinstance(args, list):
            self.expect(join_path(p, "args"), "an array of expressions", args)
            return None
        arity = 1 if op == "not" else 2 if op in ir.BINARY_OPS else None
        if arity is not None and len(args) != arity:
            self.err(
                "expr",
                join_path(p, "args"),
                f"`{op}` takes {'one argument' if arity == 1 else 'two arguments'}, "
                f"found {len(args)}",
            )
            bad = True
        k = 0
        if op in ir.CARD_OPS:
            if "k" not in node:
                self.err("missing", p, f"missing `k` of `{op}`", help='write `"k": 1` or similar')
                bad = True
            elif not _is_int(node["k"]):
                self.expect(join_path(p, "k"), "a whole number", node["k"])
                bad = True
            elif node["k"] < 0:
                self.err("expr", join_path(p, "k"), f"`k` must be 0 or more, found {node['k']}")
                bad = True
            else:
                k = node["k"]
        elif "k" in node:
            self.err(
                "expr",
                join_path(p, "k"),
                f"`k` belongs to `atleast`/`atmost`/`exactly`, not `{op}`",
            )
            bad = True
        if bad:
            return None
        return op, k, args

    # --- protocol IR ---------------------------------------------------------------------------

    def protocol(self, obj: Any, path: str) -> ir.Protocol | None:
        errors_before = len(self.diags)
        if not isinstance(obj, dict):
            self.expect(path, "a protocol object", obj)
            return None
        schema = obj.get("schema")
        if "schema" not in obj:
            self.err("schema", path, f"missing `schema`; expected `{PROTOCOL_SCHEMA}`")
        elif schema != PROTOCOL_SCHEMA:
            self.err(
                "schema",
                join_path(path, "schema"),
                f"unsupported protocol schema `{show(schema)}`; expected `{PROTOCOL_SCHEMA}`",
            )
            return None
        self.unknown_keys(obj, path, PROTOCOL_KEYS, "a protocol")
        name = self.name(obj, "name", path, IDENT_RE)
        text = self.string(obj, "text", path, required=False) or ""

        atoms: dict[str, ir.AtomDecl] = {}
        roles: dict[str, str | None] = {}  # every declared name, with its role if valid
        raw_atoms = self.array(obj, "atoms", path)
        ap = join_path(path, "atoms")
        if raw_atoms is not None and len(raw_atoms) > self.limits.max_atoms:
            self.limit(ap, "the number of atoms", len(raw_atoms), "max_atoms")
            raw_atoms = None
        first: dict[str, int] = {}
        for i, a in enumerate(raw_atoms or ()):
            p = _idx(ap, i)
            if not isinstance(a, dict):
                self.expect(p, "an atom object", a)
                continue
            self.unknown_keys(a, p, ("name", "role", "description"), "an atom")
            an = self.name(a, "name", p, ATOM_NAME_RE)
            role = self.string(a, "role", p)
            desc = self.string(a, "description", p, required=False) or ""
            if role is not None and role not in ir.ROLES:
                self.err(
                    "role",
                    join_path(p, "role"),
                    f"unknown role `{show(role)}`",
                    help="a role is `judge`, `context` or `procedure`",
                )
                role = None
            if an is None:
                continue
            if an in first:
                self.err(
                    "duplicate-atom",
                    join_path(p, "name"),
                    f"atom `{show(an)}` is declared twice",
                    notes=(f"the first declaration is `{_idx(ap, first[an])}`",),
                )
                continue
            first[an] = i
            roles[an] = role
            if role is not None:
                atoms[an] = ir.AtomDecl(an, role, desc)
        # without a readable atom list, names are not checked: that would only echo one error
        names: Mapping[str, str | None] | None = roles if raw_atoms is not None else None

        constraints = []
        cp = join_path(path, "constraints")
        seen_c: dict[str, int] = {}
        for i, c in enumerate(self.array(obj, "constraints", path, required=False) or []):
            p = _idx(cp, i)
            if not isinstance(c, dict):
                self.expect(p, "a constraint object", c)
                continue
            self.unknown_keys(c, p, ("name", "expr"), "a constraint")
            cn = self.name(c, "name", p, ATOM_NAME_RE)
            if cn is not None and cn in seen_c:
                self.err(
                    "duplicate-name",
                    join_path(p, "name"),
                    f"constraint `{show(cn)}` is declared twice",
                    notes=(f"the first is `{_idx(cp, seen_c[cn])}`",),
                )
            elif cn is not None:
                seen_c[cn] = i
            if "expr" not in c:
                self.err("missing", p, "missing `expr`")
                continue
            e = self.expr(c["expr"], join_path(p, "expr"), names)
            if cn is not None and e is not None:
                constraints.append(ir.Constraint(cn, e))

        decision = None
        if "decision" not in obj:
            self.err("missing", path, "missing `decision`", help="every protocol has one decision")
        else:
            decision = self.expr(obj["decision"], join_path(path, "decision"), names)

        requirements = []
        rp = join_path(path, "requirements")
        seen_r: dict[str, int] = {}
        for i, r in enumerate(self.array(obj, "requirements", path, required=False) or []):
            p = _idx(rp, i)
            if not isinstance(r, dict):
                self.expect(p, "a requirement object", r)
                continue
            self.unknown_keys(r, p, ("id", "description", "expr", "addressed"), "a requirement")
            rid = self.name(r, "id", p, ATOM_NAME_RE)
            if rid is not None and rid in seen_r:
                self.err(
                    "duplicate-name",
                    join_path(p, "id"),
                    f"requirement `{show(rid)}` is declared twice",
                    notes=(f"the first is `{_idx(rp, seen_r[rid])}`",),
                )
            elif rid is not None:
                seen_r[rid] = i
            desc = self.string(r, "description", p, required=False) or ""
            if "expr" not in r:
                self.err("missing", p, "missing `expr`")
                continue
            e = self.expr(r["expr"], join_path(p, "expr"), names)
            addressed = None
            if r.get("addressed") is not None:
                addressed = self.expr(r["addressed"], join_path(p, "addressed"), names)
                if addressed is None:
                    continue
            if rid is not None and e is not None:
                requirements.append(ir.Requirement(rid, desc, e, addressed))

        grounding = []
        gp = join_path(path, "grounding")
        for i, g in enumerate(self.array(obj, "grounding", path, required=False) or []):
            p = _idx(gp, i)
            if not isinstance(g, dict):
                self.expect(p, "a grounding object", g)
                continue
            self.unknown_keys(g, p, ("judge", "context"), "a grounding pair")
            j = self.string(g, "judge", p)
            c = self.string(g, "context", p)
            for key, n in (("judge", j), ("context", c)):
                if n is None or names is None:
                    continue
                if n not in names:
                    self.err(
                        "unknown-atom",
                        join_path(p, key),
                        f"unknown atom `{show(n)}`",
                        help=_did_you_mean(n, names),
                    )
                elif names[n] is not None and names[n] != key:
                    self.err(
                        "ground-role",
                        join_path(p, key),
                        f"the {key} side of a grounding pair must be a `{key}` atom; "
                        f"`{show(n)}` is a `{names[n]}` atom",
                        help="a grounding pair is written judge ~ context",
                    )
            if j is not None and c is not None:
                grounding.append(ir.GroundPair(j, c))

        if len(self.diags) > errors_before or name is None or decision is None:
            return None
        return ir.Protocol(
            name,
            text,
            tuple(atoms.values()),
            tuple(constraints),
            decision,
            tuple(requirements),
            tuple(grounding),
        )

    # --- replays --------------------------------------------------------------------------------

    def replay(self, obj: Any, base_dir: Path | None) -> Replay | None:
        if not isinstance(obj, dict):
            self.err("type", "$", f"expected a replay object at the top level, found {_kind(obj)}")
            return None
        schema = obj.get("schema")
        if "schema" not in obj:
            self.err(
                "schema",
                "$",
                f"missing `schema`; expected `{REPLAY_SCHEMA}`",
                help=f'add `"schema": "{REPLAY_SCHEMA}"`',
            )
        elif schema != REPLAY_SCHEMA:
            hint = None
            if schema == PROTOCOL_SCHEMA:
                hint = "this is protocol IR; a replay embeds it under `protocol`"
            self.err(
                "schema",
                "schema",
                f"unsupported schema `{show(schema)}`; expected `{REPLAY_SCHEMA}`",
                help=hint,
            )
            return None
        self.unknown_keys(obj, "", REPLAY_KEYS, "a replay")

        rid = self.string(obj, "id", "")
        domains = self.domains(obj)
        protocol = self.replay_protocol(obj, base_dir, domains)

        translation = "valid"
        if "translation" in obj:
            t = obj["translation"]
            if not isinstance(t, dict):
                self.expect("translation", 'an object such as `{"status": "valid"}`', t)
            else:
                self.unknown_keys(t, "translation", ("status",), "`translation`")
                st = self.string(t, "status", "translation", required=False)
                if st is not None and st not in TRANSLATION_STATUSES:
                    self.err(
                        "translation",
                        "translation.status",
                        f"unknown translation status `{show(st)}`",
                        help="a status is `valid`, `partial` or `invalid`",
                    )
                elif st is not None:
                    translation = st

        sources = self.replay_sources(obj)
        verdict = self.verdict(obj, "verdict", required=True)
        gold = self.verdict(obj, "gold", required=False)
        annotations = self.annotations(obj, protocol, sources)

        if self.diags or rid is None or protocol is None or verdict is None:
            return None
        return Replay(
            id=rid,
            protocol=protocol,
            verdict=verdict,
            annotations=annotations,
            sources=MappingProxyType(dict(sources)),
            translation=translation,
            gold=gold,
            domains=MappingProxyType(domains),
            file=self.file,
            warnings=tuple(self.warnings),
        )

    def domains(self, obj: dict) -> dict[str, tuple[str, ...]]:
        out: dict[str, tuple[str, ...]] = {}
        if "domains" not in obj or obj["domains"] is None:
            return out
        d = obj["domains"]
        if not isinstance(d, dict):
            self.expect("domains", "an object mapping each domain to its members", d)
            return out
        for dn, members in d.items():
            p = join_path("domains", dn)
            if not IDENT_RE.match(dn):
                self.err("name", p, f"`{show(dn)}` is not a valid domain name")
                continue
            if not isinstance(members, list):
                self.expect(p, "an array of member names", members)
                continue
            if len(members) > self.limits.max_domain_size:
                self.limit(p, f"the size of domain `{dn}`", len(members), "max_domain_size")
                continue
            seen: dict[str, int] = {}
            ok = True
            for i, m in enumerate(members):
                mp = _idx(p, i)
                if not isinstance(m, str):
                    self.expect(mp, "a member name (a string)", m)
                    ok = False
                elif not IDENT_RE.match(m):
                    self.err(
                        "name",
                        mp,
                        f"`{show(m)}` is not a valid member name",
                        help="names are letters, digits and `_`, not starting with a digit",
                    )
                    ok = False
                elif m in seen:
                    self.err(
                        "domain",
                        mp,
                        f"member `{m}` occurs twice in domain `{dn}`",
                        notes=(f"the first is `{_idx(p, seen[m])}`",),
                    )
                    ok = False
                else:
                    seen[m] = i
            if ok:
                out[dn] = tuple(members)
        return out

    def replay_protocol(
        self, obj: dict, base_dir: Path | None, domains: dict[str, tuple[str, ...]]
    ) -> ir.Protocol | None:
        if "protocol" not in obj:
            self.err("missing", "$", "missing `protocol`")
            return None
        p = obj["protocol"]
        forms_help = (
            'embed protocol IR (`"schema": "unmask.protocol/1"`), or write '
            '`{"path": "FILE.proto"}` or `{"source": "protocol …"}`'
        )
        if not isinstance(p, dict):
            self.err(
                "protocol-form",
                "protocol",
                f"expected a protocol object, found {_kind(p)}",
                help=forms_help,
            )
            return None
        forms = [k for k in ("path", "source") if k in p]
        if "schema" in p or not forms:
            if forms:
                self.err(
                    "protocol-form",
                    "protocol",
                    f"a protocol is either embedded IR or `{forms[0]}`, not both",
                    help=forms_help,
                )
                return None
            if "schema" not in p and "atoms" not in p:
                self.err("protocol-form", "protocol", "expected a protocol", help=forms_help)
                return None
            if domains:
                self.warn(
                    "domains-ignored",
                    "domains",
                    "`domains` is ignored: an embedded protocol is already ground",
                )
            return self.protocol(p, "protocol")
        if len(forms) == 2:
            self.err(
                "protocol-form",
                "protocol",
                "a protocol has `path` or `source`, not both",
                help=forms_help,
            )
            return None
        form = forms[0]
        self.unknown_keys(p, "protocol", (form,), "`protocol`")
        text = self.string(p, form, "protocol")
        if text is None:
            return None
        fp = join_path("protocol", form)
        if form == "path":
            full = Path(text) if base_dir is None else base_dir / text
            filename = str(full)
            try:
                with open(full, "rb") as fh:
                    data = fh.read(self.limits.max_file_bytes + 1)
            except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
                reason = (getattr(exc, "strerror", None) or "cannot read").lower()
                self.err(
                    "protocol-file",
                    fp,
                    f"cannot read `{show(filename, 200)}`: {reason}",
                    help="`path` is relative to the replay file",
                )
                return None
            if len(data) > self.limits.max_file_bytes:
                self.limit(fp, "the protocol file's size in bytes", len(data), "max_file_bytes")
                return None
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.err(
                    "encoding",
                    fp,
                    f"`{show(filename, 200)}` is not valid UTF-8 (at byte {exc.start})",
                    help="save the file as UTF-8",
                )
                return None
        else:
            filename = f"{self.file}: {fp}" if self.file else fp
        if len(text) > self.limits.max_source_chars:
            self.limit(fp, "the protocol's length in characters", len(text), "max_source_chars")
            return None
        self.sources[filename] = text
        try:
            from unmask.compiler import compile_source
        except ImportError:
            self.err(
                "protocol-form",
                fp,
                "this build cannot compile `.proto` text",
                help="embed the protocol IR written by `unmaskc` instead",
            )
            return None
        try:
            return compile_source(text, filename, domains, self.limits)
        except UnmaskError as exc:
            # a diagnostic about `domains` has a JSON path but no file: it is this replay's
            self.diags.extend(
                replace(d, file=self.file) if d.span is None and d.file is None else d
                for d in exc.diagnostics
            )
            return None
        except RecursionError:  # only when --max-expr-depth was raised past the compiler
            self.err(
                "limit",
                fp,
                "the protocol nests too deeply to compile",
                help=f"lower `{self.limits.option('max_expr_depth')}`",
            )
            return None

    def replay_sources(self, obj: dict) -> dict[str, str]:
        out: dict[str, str] = {}
        if "sources" not in obj:
            self.err(
                "missing",
                "$",
                "missing `sources`",
                help="`sources` holds the texts that evidence quotes",
            )
            return out
        s = obj["sources"]
        if not isinstance(s, dict):
            self.expect("sources", "an object of source texts", s)
            return out
        for k, v in s.items():
            p = join_path("sources", k)
            if k not in SOURCES:
                self.err(
                    "unknown-source",
                    p,
                    f"unknown source `{show(k)}`",
                    help=_did_you_mean(k, SOURCES)
                    or f"sources are {', '.join(f'`{n}`' for n in SOURCES)}",
                )
                continue
            if not isinstance(v, str):
                self.expect(p, "the source text (a string)", v)
                self.bad_sources.add(k)
                continue
            if len(v) > self.limits.max_source_chars:
                self.bad_sources.add(k)
                self.limit(
                    p, f"the length of source `{k}` in characters", len(v), "max_source_chars"
                )
                continue
            out[k] = v
        return out

    def verdict(self, obj: dict, key: str, required: bool) -> str | None:
        if key not in obj or (not required and obj[key] is None):
            if required:
                self.err("missing", "$", f"missing `{key}`", help="write `PASS` or `FAIL`")
            return None
        v = obj[key]
        if v in VERDICTS:
            return v
        hint = "write `PASS` or `FAIL`" + ("" if required else ", or null when there is none")
        if isinstance(v, str) and v.upper() in VERDICTS:
            hint = f"write `{v.upper()}` in capitals"
        self.err(
            key,
            key,
            f"{'the verdict' if required else 'the gold label'} must be `PASS` or `FAIL`, "
            f"found {f'`{show(v)}`' if isinstance(v, str) else _kind(v)}",
            help=hint,
        )
        return None

    def annotations(
        self, obj: dict, protocol: ir.Protocol | None, sources: dict[str, str]
    ) -> tuple[Annotation, ...]:
        raw = self.array(obj, "annotations", "")
        if raw is None:
            return ()
        atoms = {a.name: a for a in protocol.atoms} if protocol is not None else None
        encoded: dict[str, tuple[bytes, bytes]] = {}
        first: dict[str, int] = {}
        out = []
        for i, a in enumerate(raw):
            p = _idx("annotations", i)
            if not isinstance(a, dict):
                self.expect(p, "an annotation object", a)
                continue
            self.unknown_keys(a, p, ("atom", "value", "evidence", "explanation"), "an annotation")
            name = self.string(a, "atom", p)
            role = None
            if name is not None:
                if name in first:
                    self.err(
                        "duplicate-annotation",
                        join_path(p, "atom"),
                        f"atom `{show(name)}` is annotated twice",
                        help="keep one annotation per atom; merge their evidence",
                        notes=(f"the first annotation is `annotations[{first[name]}]`",),
                    )
                else:
                    first[name] = i
                if atoms is not None:
                    decl = atoms.get(name)
                    if decl is None:
                        self.err(
                            "unknown-atom",
                            join_path(p, "atom"),
                            f"unknown atom `{show(name)}`",
                            help=_did_you_mean(name, atoms),
                        )
                    else:
                        role = decl.role
            value = self.string(a, "value", p)
            if value is not None and value not in VALUES:
                hint = "a value is `TRUE`, `FALSE` or `UNKNOWN`"
                if value.upper() in VALUES:
                    hint = f"write `{value.upper()}` in capitals"
                self.err(
                    "value", join_path(p, "value"), f"unknown value `{show(value)}`", help=hint
                )
                value = None
            explanation = self.string(a, "explanation", p, required=False) or ""
            ev_raw = self.array(a, "evidence", p, required=False)
            evidence = []
            if ev_raw is not None:
                if value in ("TRUE", "FALSE") and not ev_raw:
                    self.err(
                        "evidence-missing",
                        join_path(p, "evidence"),
                        f"a {value} annotation needs at least one evidence span",
                        help="quote the text that shows it, or make the value `UNKNOWN`",
                    )
                for j, e in enumerate(ev_raw):
                    ev = self.evidence(e, f"{p}.evidence[{j}]", role, sources, encoded)
                    if ev is not None:
                        evidence.append(ev)
            if name is not None and value is not None:
                out.append(Annotation(name, value, tuple(evidence), explanation, i))
        return tuple(out)

    def evidence(
        self,
        e: Any,
        p: str,
        role: str | None,
        sources: dict[str, str],
        encoded: dict[str, tuple[bytes, bytes]],
    ) -> Evidence | None:
        if not isinstance(e, dict):
            self.expect(p, "an evidence object", e)
            return None
        self.unknown_keys(e, p, ("source", "start", "end", "quote"), "evidence")
        src = self.string(e, "source", p)
        quote = self.string(e, "quote", p)
        bounds = []
        for key in ("start", "end"):
            if key not in e:
                self.err("missing", p, f"missing `{key}`")
            elif not _is_int(e[key]):
                self.expect(join_path(p, key), "a whole number", e[key])
            else:
                bounds.append(e[key])
        sp = f"{p}.source"
        if src is None:
            return None
        if src not in SOURCES:
            self.err(
                "unknown-source",
                sp,
                f"unknown source `{show(src)}`",
                help=_did_you_mean(src, SOURCES),
            )
            return None
        if src == "protocol":
            self.err(
                "evidence-role",
                sp,
                "the protocol text is never evidence",
                help="quote the judge's rationale or trace, the context or the response",
            )
            return None
        if role is not None and src not in EVIDENCE_SOURCES[role]:
            allowed = " or ".join(f"`{s}`" for s in EVIDENCE_SOURCES[role])
            self.err(
                "evidence-role",
                sp,
                f"evidence for a `{role}` atom comes from {allowed}, not `{src}`",
            )
            return None
        if src not in sources:
            if src in self.bad_sources:
                return None
            self.err(
                "source-missing",
                sp,
                f"source `{src}` is not in `sources`",
                help=f"add `sources.{src}`, the text this span quotes",
            )
            return None
        if quote is None or len(bounds) != 2:
            return None
        start, end = bounds
        text = sources[src]
        if 0 <= start < end <= len(text) and text[start:end] == quote:
            return Evidence(src, start, end, quote)
        self.bad_span(p, src, text, start, end, quote, encoded)
        return None

    def bad_span(
        self,
        p: str,
        src: str,
        text: str,
        start: int,
        end: int,
        quote: str,
        encoded: dict[str, tuple[bytes, bytes]],
    ) -> None:
        found = text.find(quote) if quote else -1
        where = f"the quote occurs at [{found}, {found + len(quote)})" if found >= 0 else None
        if not text.isascii() and quote and 0 <= start < end:
            if src not in encoded:
                encoded[src] = (
                    text.encode("utf-8", "surrogatepass"),
                    text.encode("utf-16-le", "surrogatepass"),
                )
            utf8, utf16 = encoded[src]
            for unit, data, width, codec in (
                ("UTF-8 bytes", utf8, 1, "utf-8"),
                ("UTF-16 code units", utf16, 2, "utf-16-le"),
            ):
                if end * width <= len(data) and (
                    data[start * width : end * width].decode(codec, "replace") == quote
                ):
                    self.err(
                        "span-units",
                        p,
                        f"span [{start}, {end}) of `{src}` does not select the quote in "
                        "Unicode code points",
                        help=f"these offsets match the quote when counted in {unit}; "
                        "Unmask counts Unicode code points",
                        notes=(where,) if where else (),
                    )
                    return
        n = len(text)
        if not 0 <= start < n:
            self.err(
                "span-range",
                join_path(p, "start"),
                f"`start` {start} is outside `{src}`, which has {n} characters "
                f"(valid starts are 0 to {max(n - 1, 0)})",
                help=where,
            )
        elif not start < end <= n:
            self.err(
                "span-range",
                join_path(p, "end"),
                f"`end` {end} must be greater than `start` {start} and at most {n}, "
                f"the length of `{src}`",
                help=where or "spans are half-open: `end` is one past the last character",
            )
        else:
            hint = where
            if hint is None:
                hint = "copy the quote from the source exactly"
            elif found != start:
                hint = f"{where}; set `start` to {found} and `end` to {found + len(quote)}"
            self.err(
                "span-quote",
                join_path(p, "quote"),
                f"the quote does not match `{src}`[{start}:{end}]",
                help=hint,
                notes=(f"the span selects `{show(text[start:end])}`",),
            )


def _build(op: str, k: int, args: list[ir.Expr | None]) -> ir.Expr | None:
    if any(a is None for a in args):
        return None
    if op == "not":
        return ir.mk_not(args[0])
    if op in ir.NARY_OPS:
        return ir.mk_nary(op, args)
    if op in ir.BINARY_OPS:
        return ir.mk_binary(op, args[0], args[1])
    return ir.mk_card(op, k, args)


def _did_you_mean(name: str, candidates: Any) -> str | None:
    if not isinstance(name, str) or len(candidates) > _SUGGEST_MAX:
        return None
    close = difflib.get_close_matches(name, list(candidates), n=1)
    return f"did you mean `{close[0]}`?" if close else None


def _fail(v: _Validator) -> UnmaskError:
    err = UnmaskError(v.diags)
    err.sources = dict(v.sources)  # type: ignore[attr-defined]
    return err


# --- public API -------------------------------------------------------------------------------


def protocol_from_json(
    obj: Any,
    path: str = "protocol",
    file: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> ir.Protocol:
    """Validate ``unmask.protocol/1`` IR; JSON paths in errors start at ``path``."""
    v = _Validator(file, limits)
    p = v.protocol(obj, path)
    if p is None or v.diags:
        raise _fail(v)
    return p


def replay_from_obj(
    obj: Any,
    file: str | None = None,
    base_dir: str | Path | None = None,
    limits: Limits = DEFAULT_LIMITS,
    line: int | None = None,
) -> Replay:
    """Validate an already parsed replay; ``line`` (JSON Lines) is shown as ``FILE:LINE``."""
    label = f"{file or '<input>'}:{line}" if line is not None else file
    v = _Validator(label, limits)
    r = v.replay(obj, Path(base_dir) if base_dir is not None else None)
    if r is None or v.diags:
        if not v.diags:  # cannot happen: every None path records an error; stay loud anyway
            v.err("invalid", "$", "the replay is invalid")
        raise _fail(v)
    return r


def load_replay_text(
    text: str,
    file: str | None = None,
    base_dir: str | Path | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Replay:
    obj = parse_json_text(text, file, limits)
    return replay_from_obj(obj, file, base_dir, limits)


def load_replay(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> Replay:
    obj = read_json_file(path, limits)
    return replay_from_obj(obj, str(path), Path(path).parent, limits)


def render_error(err: UnmaskError) -> str:
    """All diagnostics of ``err``, with source excerpts where the error carries them."""
    return render_all(err.diagnostics, getattr(err, "sources", None))
