"""What the engine's processes say to each other: typed records and the one codec.

  codec       a frozen dataclass <-> `{"op": ..., **fields}`, every field's type checked
  messages    judge <-> worker (Hello, Run, Done, ...)
  control     node <-> judge (JudgeJob, JudgeEvent, JudgeReport, ...)
  timing      what a timing phase's samples are, and the rules both sides apply to them
  start       the record each child process starts with
  rank_ends   the zygote's log format: how each rank ended

Every process imports what it reads from here and nothing of the others: the sandbox
imports messages, start and rank_ends (tests/test_import_graph.py checks it). Stands on
wire/ (frames).
"""
