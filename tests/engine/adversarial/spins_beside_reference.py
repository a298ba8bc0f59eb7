# HACK: answers honestly, but leaves a process of its own spinning whenever its call is not
# running: on cpu that is while the reference's half is timed. Both workers' ranks share every
# core at one scheduling class there (engine/node/cpu_pins.py), so the spinner takes cores from
# the reference at equal weight, the reference reads slower and the candidate faster; its own
# half loses nothing, since the spinner waits while the call runs. A harness that leaves the
# candidate's processes running between its halves (this one before judge/freezer.py) scores
# it faster than the same code without the spinner.
# EXPECTED: correct, and no faster than store_exchange.py (the same exchange, no spinner):
# the judge stops the rank and its children while the reference's half runs, and the rank
# cannot resume them (SIGCONT is refused by the filter).


def _busy() -> None:
    pass  # a spin


# pkb:include ../fixtures/candidates/store_exchange.py
# pkb:include ../fixtures/candidates/busy_between_calls.py
