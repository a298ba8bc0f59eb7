# pkb:include ../_shared/vocab_parallel_logprob/truth.py

BACKWARD = True
