"""The floor ``unmask bench`` compares the audit with: less than any audit can do.

Contract: ``evaluate_once(replay)`` takes a validated replay (reading and validating are
timed with it, as for every runner) and evaluates each formula of its protocol exactly once
(every constraint, every label's decision, every requirement and what addresses it, every
grounding pair) under one total assignment: the annotated values, UNKNOWN and unannotated
atoms false. It returns the number of formulas evaluated. No check can be answered with
less work than this, so the audit's time over the floor's says how much the checking
itself costs on top of reading the replay.
"""

from __future__ import annotations

from typing import Any


def formulas(protocol: Any) -> list[Any]:
    """Every formula of ``protocol``, once each, in declaration order."""
    from unmask.ir import mk_iff, mk_implies

    out = [c.expr for c in protocol.constraints]
    out += [protocol.decision_for(label) for label in protocol.labels]
    for r in protocol.requirements:
        out.append(r.expr)
        if r.addressed is not None:
            out.append(r.addressed)
    for g in protocol.grounding:
        join = mk_iff if g.direction == "~" else mk_implies
        out.append(join(g.judge, g.context))
    return out


def evaluate_once(replay: Any) -> int:
    from unmask.ir import evaluate

    protocol = replay.protocol
    given = {a.atom: a.value == "TRUE" for a in replay.annotations}
    env = {d.name: given.get(d.name, False) for d in protocol.atoms}
    fs = formulas(protocol)
    for f in fs:
        evaluate(f, env)
    return len(fs)
