"""Protocol analysis: what is wrong with a protocol, or between two versions of it, before
any replay meets it (`unmask analyze`, `unmask compare`).

Beside the checker in the Semantics layer: it asks the same backends the same kind of
satisfiability questions, over every assignment of the atoms, through the backend
interface only. ``ground`` loads and grounds a protocol at a stated scope, ``solve`` asks
and builds canonical witnesses, ``findings`` is the table of codes, ``analyze`` and
``compare`` compute, ``render`` writes text, JSON and SARIF. ``overlap`` finds decisions
that can hold at once, and ``compiled`` runs it where a protocol is compiled (`unmaskc`),
since the compiler itself knows no solver.
"""
