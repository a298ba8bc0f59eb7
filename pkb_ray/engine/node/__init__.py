"""The node side: what runs in the node's process (a NodeEvaluator actor, `pkb eval`, a
script that calls evaluate()). It never imports candidate code and never touches CUDA.

  evaluation        evaluate(request): static check, problem, hardware, the judges, verdict
  judge_node        JudgeNode: one GPU group's judges and the sandboxes started ahead
  node_evaluator    the Ray actor that holds a whole GPU node and owns its groups' judges
  gpu_groups        lending disjoint groups of a node's GPUs, by the measured topology
  verdict           the judges' reports -> the one EvalResult
  timing_evidence   the judges' samples -> figures and their evidence
  timing_stats      the speedup's interval
  timing_modes      each problem's timing mode, kept per node
  reference_timings the on-disk cache of reference timings
  cpu_pins          which core each judge and rank takes

Imports neither judge/ nor worker/: it starts them through launch/ and reads what they
send through protocol/ (tests/test_import_graph.py checks it).
"""
