"""The IR: the ground Boolean language every layer above shares.

Contract: a protocol compiled from `.proto` text is a tree of frozen nodes built through
smart constructors (``nodes``), folded by one iterative ``fold`` whose consumers are tables
keyed by node type. Around the nodes: the one text printer (``text``), partial evaluation
for the solver-free backends (``partial``), and the ``unmask.protocol/1`` JSON written
(``json``) and read back with every problem at its JSON path (``json_reader``). The IR
imports nothing of the project but the plumbing; no backend, no checker.

``from unmask import ir`` gives the nodes and their constructors (``ir.mk_and``).
"""

from unmask.ir.nodes import *  # noqa: F403 (the package's face is its nodes)
from unmask.ir.nodes import __all__ as __all__
