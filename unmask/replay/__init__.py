"""Replays: what a judge said about one case, with the evidence for each annotation.

Contract: ``format`` defines the replay JSON once, as typed structs (the published schema
derives from them); ``load`` reads untrusted replay JSON into them and then into the
validated, frozen ``data`` (the envelope, the protocol it names or embeds, every
annotation's evidence checked by ``evidence``; where a protocol path may point,
``confine``); ``recheck`` reads a protocol given apart from the replays; ``builder`` is the
public way to write one from Python (every importer and proposer uses it); ``judgeschema``
states what a judge's structured output looks like and reads one; ``inputs`` is the
replays paths name (files, folders, JSON Lines, stdin), as the audit and every command that
reads replays take them. Loading a replay never imports the checker, and the gold label
never reaches a solver. Replays import the language, the IR and the plumbing.
"""
