# pkb:include ../_shared/vocab_parallel_logprob/inputs.py

CHUNKED = False
BACKWARD = False
