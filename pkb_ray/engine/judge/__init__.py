"""The trusted side: judge processes, one per GPU, kept across candidates.

A judge never imports candidate code. It makes every input from seeds drawn fresh for each
evaluation, runs and times the reference, keeps the expected outputs, hands its worker
inputs through an arena, checks what comes back (outputs, untouched inputs, times against
its own clock) and alone decides its rank's verdict.

Runs only in the judge process (`python -m pkb_ray.engine.judge.main`): imports neither
node/ nor worker/, and reads its job and sends its report through protocol/.
"""
