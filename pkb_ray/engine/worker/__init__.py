"""The untrusted side: processes that import and run candidate code, inside the sandbox.

Nothing here imports the judge's side (pkb_ray.engine.judge), holds a seed, a reference
output or a harness process group; a test checks the imports. What a worker says is data
for its judge to check, never a verdict.
"""
