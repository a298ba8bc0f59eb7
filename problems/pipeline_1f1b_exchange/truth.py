"""Ground truth for `pipeline_1f1b_exchange`: every rank's output from all ranks' inputs, in one process."""

def expected(inputs, world_size):
    # activations flow to the next stage, gradients to the previous one (a ring)
    return [(inputs[(r - 1) % world_size][0].clone(), inputs[(r + 1) % world_size][1].clone())
            for r in range(world_size)]
