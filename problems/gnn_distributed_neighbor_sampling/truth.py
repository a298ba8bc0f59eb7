import torch


def expected(inputs, world_size):
    """inputs[r] = (seed_nodes, fanouts, local_colptr, local_row, local_eid, node_to_rank, node_local)."""
    owner, local = inputs[0][5], inputs[0][6]
    # each node's in-neighbour list and edge ids, read from its owner's local CSC
    adj = {}
    for v in range(owner.numel()):
        _, _, colptr, row, eid, _, _ = inputs[int(owner[v])]
        lo, hi = int(colptr[local[v]]), int(colptr[local[v] + 1])
        adj[v] = (row[lo:hi].tolist(), eid[lo:hi].tolist())
    outs = []
    for seeds, fanouts, *_ in inputs:
        node = seeds.tolist()
        index = {v: i for i, v in enumerate(node)}
        src = list(node)
        rows, cols, edges = [], [], []
        for k in fanouts:
            if not src:
                break
            hop = []
            for v in src:
                nb, eids = adj[v]
                take = len(nb) if k < 0 else min(k, len(nb))
                hop += [(u, v, e) for u, e in zip(nb[:take], eids[:take])]
            if not hop:
                break
            src = []
            for u, _, _ in hop:
                if u not in index:
                    index[u] = len(node)
                    node.append(u)
                    src.append(u)
            rows += [index[u] for u, _, _ in hop]
            cols += [index[v] for _, v, _ in hop]
            edges += [e for _, _, e in hop]
        t = lambda x: torch.tensor(x, dtype=torch.int64)  # noqa: E731
        outs.append((t(node), t(rows), t(cols), t(edges)))
    return outs
