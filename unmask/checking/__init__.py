"""Checking: a validated replay against its protocol, to a report.

Contract: ``bases`` builds the three bases (protocol, evidence, both) from a ``Case`` that
has no gold label; ``checker`` classifies each check on a backend, or in closed form where
the facts settle it (``closed``); ``explain`` gives canonical witnesses and minimal
explanations, the same on every backend; ``aggregate`` gives each check's outcome, the
dimensions and the overall result; ``report`` is the result as frozen data with its
canonical JSON defined in ``shapes`` and written, read back and published by ``formats``,
and ``record`` the one record of a result line every batch output reads.
``outcomes`` remembers reports of small protocols per fact pattern; ``next`` ranks what to
annotate next; ``solve`` and ``overlap`` ask questions of a protocol alone. The report is
data: checking imports no format.
"""
