"""The suite's self-check and audit, `pkb problems check`: every reference run in real rank
processes (gloo on CPU, one per GPU with NCCL on CUDA), held to the problem contract and
compared with its truth.py, and audited as a benchmark (audit/: timing, launch-boundness,
roofline counts, tolerance, inputs). (Not the sweep's "CPU self-check", which evaluates
model=reference through the engine.)

  launcher.py  start N rank processes, hear what each says, kill them all in time
  ranks.py     one group of rank processes looping over many problems
  truth.py     a problem's truth.py: every rank's output from all ranks' inputs, in one process
  check.py     the contract checks of one reference on one rank, and the verdicts
  audit/       the suite audit built on these (its __init__ says what it checks)
  cli.py       `pkb problems check`, added to problems/cli.py's `pkb problems`

May import records, config, problems and the engine (its comparator, so that the check
and the judge agree on what "equal within tolerance" means); nothing below imports it, so
the problems and the engine never import each other in a circle.
"""
