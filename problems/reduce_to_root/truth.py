def expected(inputs, world_size):
    dst = inputs[0][1]
    total = sum(x.double() for x, _ in inputs).to(inputs[0][0].dtype)
    return [total if r == dst else inputs[r][0].clone() for r in range(world_size)]
