"""The shared floor: the mechanisms by which a judge and its worker meet, which both run.

  frames   length-prefixed JSON on a Unix socket, descriptors alongside, bounded in size
  arena    the memory inputs and outputs cross in (sealed host memory or a cuMem export)
  gate     the launch-gate page only the judges open
  trees    argument and output trees as JSON, tensors named by their arena slot
  cores    how a process takes its core (pinned, or yielding)

Kept apart from protocol/ (what the processes say to each other): a record's fields change
with the harness, these mechanisms with the machine, and protocol/ stands on them (its
codec raises frames.ProtocolError). Standard library and torch only, no secret and no
decision, so the sandbox imports it: the judge never unpickles anything a worker sends.
"""
