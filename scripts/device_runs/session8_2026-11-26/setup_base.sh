# Unpack 9c78ee4 (the tree #22 and #23 compare node-seconds against) into /tmp/base. That tree
# has no test_world_sizes: allreduce is let run at world size 1 by adding 1 to its world sizes
# (the problem's computation is the same; only the tree's refusal goes).
mkdir -p /tmp/base && tar xzf .baseline/base_9c78ee4.tgz -C /tmp/base
sed -i 's/^world_sizes: \[2, 4, 8\]$/world_sizes: [1, 2, 4, 8]/' /tmp/base/problems/allreduce/problem.yaml
grep -n "^world_sizes" /tmp/base/problems/allreduce/problem.yaml
