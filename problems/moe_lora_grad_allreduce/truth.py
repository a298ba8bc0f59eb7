import torch


def expected(inputs, world_size):
    sums = tuple(sum(i[n].double() for i in inputs).to(inputs[0][n].dtype) for n in range(3))
    return [sums for _ in range(world_size)]
