"""The untrusted side: processes that import and run candidate code, inside the sandbox.

Imports only protocol/ and wire/ (and itself): nothing of the judge, the node or the
launcher, no seed, no reference output, no harness process group (tests/test_import_graph.py
checks the imports, tests/engine/test_wire.py what a sandboxed process has loaded). What a
worker says is data for its judge to check, never a verdict.
"""
