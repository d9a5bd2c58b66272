"""Readings and their review: which readings decide checks, and how often a reader is right.

Contract: ``queue`` lists the unreviewed annotations behind the checks they decide (findings
and passing checks), ranked, and reads review lines back; ``sample`` draws a uniform random
sample stratified by reader, blind or not; ``apply`` writes review decisions into their
replays, one locked transaction per file; ``lines`` is a review line exported, and a filled
review file read back and applied; ``session`` an interactive session's state and each
decision applied as made; ``calibration`` turns applied samples into each
reader's measured precision (the 95% Wilson interval) and a check's standing (confirmed,
trusted, to review); ``format`` defines the review line and the calibration file once, as
typed structs. Review reads replays and result lines as data; it imports the replay
layer and the plumbing, never the checker.
"""
