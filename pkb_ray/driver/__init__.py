"""The sweep: `python sweep.py` and `pkb sweep`, the top of the package.

Owns the steps of one invocation (sweep.py, composed by run.py), the checks before anything
is written (checks.py), the frozen plan that `--dry-run` prints and the pipeline runs, and
the cells' identities (plan.py, identity.py), the
overlapped pipeline generate -> build -> evaluate -> record (pipeline.py) and its stages on
Ray for each mode (stages.py, which asks agent/feedback.py in mode=agent; tool_stages.py in
mode=tools), the budget, the progress display, and the journal and MLflow writes (it is
their one writer).

May import every layer below it: records, config, store, problems, engine, generation,
agent, report and tracking. Only pkb_ray/cli.py and sweep.py import it.
"""
