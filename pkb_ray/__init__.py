"""pkb_ray: ParallelKernelBench as a cluster-scale sweep (docs/design.md).

Its packages stand in layers; each imports only its own modules and those of lower layers,
and packages on one line stay apart (tests/test_import_graph.py):

    cli                       the `pkb` command (pkb_ray/cli.py)
    driver                    the sweep
    tracking                  mirrors of the journal (MLflow)
    report                    leaderboards from recorded cells
    agent                     the agent modes: feedback (mode=agent), tools (mode=tools)
    selfcheck | generation    the suite's self-check | model calls and prompts
    engine                    one candidate, judged
    store | problems          the sweep's files | the problem suite
    records | config | console  typed records | the config schema | output fitted to the terminal

This package's own module imports nothing, so that any module may name it.
"""
