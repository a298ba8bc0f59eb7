# HACK: dereferences NULL through ctypes, killing the rank with SIGSEGV. A harness that runs
# candidates in its own process dies with it (and with every result it had not written).
# EXPECTED: runtime_error naming the signal; the evaluator survives.
import ctypes


def solution(x):
    ctypes.string_at(0)
    return x
