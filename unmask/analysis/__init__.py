"""Protocol analysis: what is wrong with a protocol, or between two versions of it, before
any replay meets it (`unmask analyze`, `unmask compare`).

Beside the checker in the Semantics layer: it asks the same backends the same kind of
satisfiability questions, over every assignment of the atoms, through the backend
interface only. ``ground`` loads and grounds a protocol at a stated scope,
``findings`` is the table of codes, ``analyze`` and ``compare`` compute, ``render`` writes
text, JSON and SARIF. The questions and their canonical witnesses (``unmask.checking.solve``) and
the decisions that can hold at once (``unmask.checking.overlap``) sit on the Semantics floor, since
the check of a replay refuses such a protocol too; ``compiled`` runs the overlap check
where a protocol is compiled (`unmaskc`), since the compiler itself knows no solver.
"""
