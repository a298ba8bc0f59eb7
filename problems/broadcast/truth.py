"""Ground truth for `broadcast`: every rank's output from all ranks' inputs, in one process."""

def expected(inputs, world_size):
    return [inputs[0][0].clone() for _ in range(world_size)]
