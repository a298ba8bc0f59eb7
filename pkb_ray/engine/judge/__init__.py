"""The trusted side: judge processes, one per GPU, kept across candidates.

A judge never imports candidate code. It makes every input from seeds drawn fresh for each
evaluation, runs and times the reference, keeps the expected outputs, hands its worker
inputs through an arena, checks what comes back (outputs, untouched inputs, times against
its own clock) and alone decides its rank's verdict.
"""
