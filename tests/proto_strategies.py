"""Hypothesis strategies for `.proto` text: random valid protocols and token soups.

``protocols()`` draws a ``Case``: a protocol's surface tree (``unmask.language.ast`` nodes), its
domains' members, and a rendering of it as text that is deliberately unlike the
formatter's output (every operator fully parenthesised, random extra parentheses, random
layout and comments, strings with random escapes), so that compiling the rendering and
compiling its formatted text are two independent routes to the same IR. A protocol may
declare verdict labels (one of them `otherwise`), plain and family definitions (used in
every kind of expression, each using only earlier ones), and ground expressions over
judge atoms against expressions over context atoms, both ways and one way. Families and
family definitions range over one or two domains (a family may name one domain twice),
and generators and `for` statements bind one or two variables.
``eval_surface`` is an oracle for what an expression means, written independently of the
compiler.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from hypothesis import strategies as st

from unmask.language import ast
from unmask.language.parser import reserved_words

ROLES = ("judge", "context", "procedure")
BINOPS = ("iff", "implies", "or", "xor", "and")
# the words the random token soups draw from: every reserved word of the language
KEYWORDS = sorted(reserved_words())


@dataclass
class Ctx:
    plain: dict[str, str] = field(default_factory=dict)  # atom -> role
    # name -> (domains, one per position, role)
    families: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    members: dict[str, tuple[str, ...]] = field(default_factory=dict)  # domain -> members
    fixed: dict[str, bool] = field(default_factory=dict)
    # definition -> (domains of a family definition, () for a plain one, body)
    defs: dict[str, tuple[tuple[str, ...], ast.Expr]] = field(default_factory=dict)
    def_roles: dict[str, frozenset[str]] = field(default_factory=dict)  # roles a body reads

    def only(self, role: str) -> Ctx:
        """The atoms of one role and the definitions that read only them (for `ground`)."""
        return Ctx(
            {a: r for a, r in self.plain.items() if r == role},
            {f: (d, r) for f, (d, r) in self.families.items() if r == role},
            self.members,
            self.fixed,
            {n: v for n, v in self.defs.items() if self.def_roles[n] <= {role}},
            self.def_roles,
        )


@dataclass
class Case:
    text: str
    domains: dict[str, list[str]]  # what to pass for the free domains
    ctx: Ctx
    decision: ast.Expr  # the decision of `pass`, or of the first declared label
    statements: list = field(default_factory=list)
    labels: tuple[str, ...] = ()  # declared labels, if any


# --- strings ---------------------------------------------------------------------------------

desc_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), max_codepoint=0x2FFF), max_size=12
)


@st.composite
def string_literal(draw, value: str) -> str:
    out = ['"']
    for ch in value:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append(draw(st.sampled_from(["\\t", "\t"])))
        elif ch == "\r":
            out.append("\\r")
        elif (ord(ch) < 0x20 or ch in "\u2028\u2029\x85") or draw(st.integers(0, 7)) == 0:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


# --- expressions -----------------------------------------------------------------------------


@st.composite
def leaf(draw, ctx: Ctx, env: dict[str, str]) -> ast.Expr:
    options = [st.builds(ast.Lit, st.booleans())]
    if ctx.plain:
        options.append(st.sampled_from(sorted(ctx.plain)).map(ast.Ref))
    member_refs = [
        ast.Ref(f, args) for f, (ds, _) in ctx.families.items() for args in _args(ctx, ds, {})
    ]
    if member_refs:
        options.append(st.sampled_from(member_refs))
    var_refs = [
        ast.Ref(f, args)
        for f, (ds, _) in ctx.families.items()
        for args in _args(ctx, ds, env)
        if any(a in env for a in args)
    ]
    if var_refs:
        options.append(st.sampled_from(var_refs))
    def_refs = [ast.Ref(n) for n, (ds, _) in ctx.defs.items() if not ds]
    for n, (ds, _) in ctx.defs.items():
        if ds:
            def_refs += [ast.Ref(n, args) for args in _args(ctx, ds, env)]
    if def_refs:
        options.append(st.sampled_from(def_refs))
    return draw(st.one_of(options))


def _args(ctx: Ctx, domains: tuple[str, ...], env: dict[str, str]) -> list[tuple[str, ...]]:
    """Argument lists for a family over ``domains``: each position a member of its domain
    or a variable bound to it (at most a few dozen, so drawing stays cheap)."""
    per = [[*ctx.members.get(d, ()), *(v for v, vd in env.items() if vd == d)] for d in domains]
    return list(itertools.islice(itertools.product(*per), 36))


def roles_read(e: ast.Expr, ctx: Ctx) -> frozenset[str]:
    """The roles of the atoms an expression reads, through definitions."""
    out: set[str] = set()
    todo = [e]
    while todo:
        x = todo.pop()
        if isinstance(x, ast.Ref):
            if x.name in ctx.defs:
                out |= ctx.def_roles[x.name]
            elif not x.args:
                out.add(ctx.plain[x.name])
            else:
                out.add(ctx.families[x.name][1])
        todo.extend(ast.children(x))
    return frozenset(out)


@st.composite
def expr(draw, ctx: Ctx, env: dict[str, str], budget: int) -> ast.Expr:
    if budget <= 0 or draw(st.integers(0, 3)) == 0:
        return draw(leaf(ctx, env))
    kind = draw(st.sampled_from(["not", "bin", "bin", "bin", "call", "gen"]))
    if kind == "not":
        return ast.NotE(draw(expr(ctx, env, budget - 1)))
    if kind == "bin":
        op = draw(st.sampled_from(BINOPS))
        return ast.BinE(op, draw(expr(ctx, env, budget - 1)), draw(expr(ctx, env, budget - 1)))
    op = draw(st.sampled_from(["all", "any", "atleast", "atmost", "exactly"]))
    if kind == "gen" and ctx.members:
        doms = draw(st.lists(st.sampled_from(sorted(ctx.members)), min_size=1, max_size=2))
        binds = tuple(ast.Binder(f"x{len(env)}_{i}", d) for i, d in enumerate(doms))
        body = draw(expr(ctx, {**env, **{b.var: b.domain for b in binds}}, budget - 1))
        k = None if op in ("all", "any") else str(draw(st.integers(0, 4)))
        return ast.Call(op, k, (), ast.Generator(body, binds))
    args = tuple(draw(st.lists(expr(ctx, env, budget - 1), max_size=3)))
    k = None if op in ("all", "any") else str(draw(st.integers(0, len(args))))
    return ast.Call(op, k, args)


def eval_surface(e: ast.Expr, world: dict[str, bool], ctx: Ctx, env: dict[str, str]) -> bool:
    """What an expression means under ``world`` (atom name -> value): the test's oracle."""
    if isinstance(e, ast.Lit):
        return e.value
    if isinstance(e, ast.Ref):
        members = [env.get(a, a) for a in e.args]
        if e.name in ctx.defs:
            params, body = ctx.defs[e.name]
            return eval_surface(body, world, ctx, dict(zip(params, members, strict=True)))
        if not e.args:
            return world[e.name]
        return world[f"{e.name}({', '.join(members)})"]
    if isinstance(e, ast.NotE):
        return not eval_surface(e.arg, world, ctx, env)
    if isinstance(e, ast.BinE):
        a = eval_surface(e.left, world, ctx, env)
        b = eval_surface(e.right, world, ctx, env)
        return {
            "and": a and b,
            "or": a or b,
            "xor": a != b,
            "implies": (not a) or b,
            "iff": a == b,
        }[e.op]
    assert isinstance(e, ast.Call)
    if e.gen is not None:
        g = e.gen
        combos = itertools.product(*(ctx.members[b.domain] for b in g.binds))
        vals = [
            eval_surface(
                g.body, world, ctx, {**env, **{b.var: m for b, m in zip(g.binds, c, strict=True)}}
            )
            for c in combos
        ]
    else:
        vals = [eval_surface(a, world, ctx, env) for a in e.args]
    if e.op == "all":
        return all(vals)
    if e.op == "any":
        return any(vals)
    k, n = int(e.k), sum(vals)
    return {"atleast": n >= k, "atmost": n <= k, "exactly": n == k}[e.op]


# --- rendering, deliberately unlike the formatter -------------------------------------------


@st.composite
def render_expr(draw, e: ast.Expr) -> list[str]:
    if isinstance(e, ast.Lit):
        toks = ["true" if e.value else "false"]
    elif isinstance(e, ast.Ref):
        toks = [e.name]
        if e.args:
            toks += ["(", *_commas(list(e.args)), ")"]
    elif isinstance(e, ast.NotE):
        toks = ["not", "(", *draw(render_expr(e.arg)), ")"]
    elif isinstance(e, ast.BinE):
        toks = ["(", *draw(render_expr(e.left)), e.op, *draw(render_expr(e.right)), ")"]
    else:
        assert isinstance(e, ast.Call)
        toks = [e.op, "("]
        if e.k is not None:
            toks += [e.k]
            if e.args or e.gen is not None:
                toks += [","]
        if e.gen is not None:
            toks += [*draw(render_expr(e.gen.body)), "for", *_binders(e.gen.binds)]
        for i, a in enumerate(e.args):
            toks += ([","] if i else []) + draw(render_expr(a))
        toks += [")"]
    if draw(st.integers(0, 5)) == 0:
        toks = ["(", *toks, ")"]
    return toks


def _commas(items: list[str]) -> list[str]:
    out: list[str] = []
    for i, x in enumerate(items):
        out += ([","] if i else []) + [x]
    return out


def _binders(binds) -> list[str]:
    out: list[str] = []
    for i, b in enumerate(binds):
        out += ([","] if i else []) + [b.var, "in", b.domain]
    return out


SEPARATORS = st.sampled_from([" ", " ", " ", "  ", "\n", "\t", " # a comment\n", "\n\n  "])


@st.composite
def join_tokens(draw, toks: list[str]) -> str:
    out = [toks[0]]
    for t in toks[1:]:
        out.append(draw(SEPARATORS))
        out.append(t)
    return "".join(out)


# --- whole protocols ---------------------------------------------------------------------


NAMES = st.integers(0, 4)


@st.composite
def protocols(draw) -> Case:
    ctx = Ctx()
    stmts: list[list[str]] = []
    free: dict[str, list[str]] = {}
    text = draw(desc_text)
    stmts.append(["protocol", "proto_x", draw(string_literal(text))])
    for i in range(draw(st.integers(0, 2))):
        name = f"d{i}"
        members = tuple(f"m{j}" for j in sorted(draw(st.sets(NAMES, max_size=3))))
        ctx.members[name] = members
        if draw(st.booleans()):
            ctx.fixed[name] = True
            toks = ["domain", name, "=", "{"]
            for j, m in enumerate(members):
                toks += ([","] if j else []) + [m]
            stmts.append([*toks, "}"])
        else:
            free[name] = list(members)
            stmts.append(["domain", name])
    n_plain = draw(st.integers(2, 4))
    for i in range(n_plain):
        role = draw(st.sampled_from(ROLES)) if i >= 2 else ROLES[i]
        ctx.plain[f"p{i}"] = role
        toks = ["atom", f"p{i}", ":", role]
        if draw(st.booleans()):
            toks.append(draw(string_literal(draw(desc_text))))
        stmts.append(toks)
    for i in range(draw(st.integers(0, 3)) if ctx.members else 0):
        # over one domain or two (the same one twice, too)
        doms = tuple(draw(st.lists(st.sampled_from(sorted(ctx.members)), min_size=1, max_size=2)))
        role = ROLES[i] if i < 2 else draw(st.sampled_from(ROLES))
        ctx.families[f"f{i}"] = (doms, role)
        desc = draw(desc_text) + "".join("{" + d + "}" for d in doms) + "{1}"
        head = ["atom", f"f{i}", "(", *_commas(list(doms)), ")"]
        stmts.append([*head, ":", role, draw(string_literal(desc))])
    for i in range(draw(st.integers(0, 3))):
        # a family definition over distinct domains, whose names are the variables of its body
        params = tuple(
            draw(st.lists(st.sampled_from(sorted(ctx.members)), max_size=2, unique=True))
            if ctx.members and draw(st.booleans())
            else ()
        )
        name = f"h{i}" if params else f"g{i}"
        body = draw(expr(ctx, {p: p for p in params}, 2))
        head = ["define", name] + (["(", *_commas(list(params)), ")"] if params else [])
        stmts.append([*head, "=", *draw(render_expr(body))])
        ctx.def_roles[name] = roles_read(body, ctx)
        ctx.defs[name] = (params, body)
    decision = draw(expr(ctx, {}, 4))
    labels: tuple[str, ...] = ()
    if draw(st.booleans()):
        stmts.append(["decision", "pass", "iff", *draw(render_expr(decision))])
    else:
        labels = tuple(f"l{i}" for i in range(draw(st.integers(2, 3))))
        toks = ["verdict", labels[0]]
        for label in labels[1:]:
            toks += ["|", label]
        if draw(st.booleans()):
            toks.append("first-match")
        stmts.append(toks)
        stmts.append(["decision", labels[0], "iff", *draw(render_expr(decision))])
        otherwise = draw(st.booleans())
        for label in labels[1:]:
            if otherwise and label == labels[-1]:
                stmts.append(["decision", label, "otherwise"])
            else:
                stmts.append(["decision", label, "iff", *draw(render_expr(draw(expr(ctx, {}, 3))))])
    for i in range(draw(st.integers(0, 2))):
        stmts.append(["constraint", f"k{i}", ":", *draw(render_expr(draw(expr(ctx, {}, 3))))])
    for i in range(draw(st.integers(0, 2))):
        head = ["requirement", f"r{i}"]
        if draw(st.booleans()):
            head.append(draw(string_literal(draw(desc_text))))
        holds = draw(render_expr(draw(expr(ctx, {}, 3))))
        if draw(st.booleans()):
            addressed = draw(render_expr(draw(expr(ctx, {}, 2))))
            stmts.append([*head, "{", "holds", ":", *holds, "addressed", ":", *addressed, "}"])
        elif draw(st.booleans()):
            stmts.append([*head, "{", "holds", ":", *holds, "}"])
        else:
            stmts.append([*head, ":", *holds])
    judges = [a for a, r in ctx.plain.items() if r == "judge"]
    contexts = [a for a, r in ctx.plain.items() if r == "context"]
    stmts.append(["ground", judges[0], "~", contexts[0]])
    judge_ctx, context_ctx = ctx.only("judge"), ctx.only("context")
    for _ in range(draw(st.integers(0, 2))):
        left = draw(render_expr(draw(expr(judge_ctx, {}, 2))))
        right = draw(render_expr(draw(expr(context_ctx, {}, 2))))
        stmts.append(["ground", *left, draw(st.sampled_from(["~", "~>"])), *right])
    if ctx.members and draw(st.booleans()):
        d = draw(st.sampled_from(sorted(ctx.members)))
        left = draw(render_expr(draw(expr(judge_ctx, {"w": d}, 2))))
        right = draw(render_expr(draw(expr(context_ctx, {"w": d}, 2))))
        arrow = draw(st.sampled_from(["~", "~>"]))
        stmts.append(["for", "w", "in", d, ":", "ground", *left, arrow, *right])
    fam_j = [f for f, (_, r) in ctx.families.items() if r == "judge"]
    fam_c = [f for f, (_, r) in ctx.families.items() if r == "context"]
    for fj in fam_j:
        for fc in fam_c:
            if ctx.families[fj][0] == ctx.families[fc][0]:
                ds = ctx.families[fj][0]
                vs = [f"v{i}" for i in range(len(ds))]
                binds = _binders([ast.Binder(v, d) for v, d in zip(vs, ds, strict=True)])
                args = ["(", *_commas(vs), ")"]
                stmts.append(["for", *binds, ":", "ground", fj, *args, "~", fc, *args])
    if ctx.members and draw(st.booleans()):
        d = draw(st.sampled_from(sorted(ctx.members)))
        body = draw(render_expr(draw(expr(ctx, {"y": d}, 2))))
        stmts.append(["for", "y", "in", d, ":", "constraint", "fc", "(", "y", ")", ":", *body])
    if ctx.members and draw(st.booleans()):
        d1, d2 = (
            draw(st.sampled_from(sorted(ctx.members))),
            draw(st.sampled_from(sorted(ctx.members))),
        )
        body = draw(render_expr(draw(expr(ctx, {"y": d1, "z": d2}, 2))))
        head = ["for", "y", "in", d1, ",", "z", "in", d2, ":"]
        stmts.append([*head, "constraint", "fd", "(", "y", ",", "z", ")", ":", *body])
    # the protocol line first, the rest in any order
    rest = draw(st.permutations(stmts[1:]))
    parts = [draw(join_tokens(s)) for s in [stmts[0], *rest]]
    lead = draw(st.sampled_from(["", "# head\n", "\n"]))
    source = lead + "".join(p + draw(st.sampled_from(["\n", " ", "  # end\n"])) for p in parts)
    return Case(source, free, ctx, decision, labels=labels)


# --- garbage ---------------------------------------------------------------------------------

SOUP_TOKENS = [
    *KEYWORDS,
    "a",
    "b",
    "x",
    "f",
    "claim",
    "(",
    ")",
    "{",
    "}",
    ",",
    ":",
    "~",
    "~>",
    "|",
    "=",
    "#c\n",
    "\n",
    '"s"',
    '"\\q"',
    '"open',
    "0",
    "3",
    "-1",
    "99999999999999999999",
    "@",
    "protocol p",
    "atom a : judge",
    "decision pass iff",
    "verdict a | b",
    "first-match",
    "decision a otherwise",
    "define f = a",
]

token_soup = st.lists(st.sampled_from(SOUP_TOKENS), max_size=40).map(" ".join)
