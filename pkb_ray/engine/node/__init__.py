"""The node side: what runs in the node's process (a NodeEvaluator actor, `pkb eval`, a
script calling evaluate()). Never runs candidate code and never touches CUDA."""
