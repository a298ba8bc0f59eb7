"""The sweep: `python sweep.py` and `pkb sweep`, the top of the package.

Owns the steps of one invocation (sweep.py, composed by run.py), the checks before anything
is written (checks.py), the frozen plan that `--dry-run` prints and the pipeline runs, and
the cells' identities (plan.py, identity.py), the overlapped pipeline generate -> build ->
evaluate -> record (pipeline.py, driving the stages the sweep's mode gives: pkb_ray/modes),
the budget, the progress display, and the journal and MLflow writes (it is their one
writer).

May import every layer below it: records, config, store, problems, engine, generation,
agent, modes, report and tracking. Only pkb_ray/cli.py and sweep.py import it.
"""
