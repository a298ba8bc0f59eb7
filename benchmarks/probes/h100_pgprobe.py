"""Which worker process group lets symmetric memory rendezvous (one GPU, world size 1)."""
import os, subprocess, sys, tempfile
CODE = r'''
import os, sys, warnings, torch, torch.distributed as dist
variant = sys.argv[1]
torch.cuda.set_device(0)
store = dist.FileStore(os.path.join(sys.argv[2], "store"), 1)
if variant.startswith("refuse"):
    sys.path.insert(0, os.getcwd())
    from pkb_ray.engine.worker import refusing_group
    if variant == "refuse_info":
        refusing_group.init(store, 0, 1, 30)
        from torch._C._distributed_c10d import _SymmetricMemory
        try:
            _SymmetricMemory.set_group_info("0", 0, 1, dist.PrefixStore("symmetric_memory-0", store))
            print("set_group_info ok")
        except Exception as e:
            print("set_group_info:", e)
    else:
        refusing_group.init(store, 0, 1, 30)
elif variant == "fake":
    import torch.testing._internal.distributed.fake_pg  # registers "fake"
    dist.init_process_group("fake", store=store, rank=0, world_size=1)
elif variant == "gloo":
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
import torch.distributed._symmetric_memory as symm
print("enable exists:", hasattr(symm, "enable_symm_mem_for_group"), "name", dist.group.WORLD.group_name, flush=True)
buf = symm.empty(1024, device="cuda:0")
h = symm.rendezvous(buf, dist.group.WORLD)
h.barrier(channel=0)
torch.cuda.synchronize()
x = torch.ones(4, device="cuda:0")
try:
    dist.all_reduce(x); torch.cuda.synchronize(); print("all_reduce ran:", x.tolist())
except Exception as e:
    print("all_reduce refused:", str(e)[:100])
print("RENDEZVOUS OK", variant, flush=True)
'''
for v in ["gloo", "fake", "refuse", "refuse_info"]:
    d = tempfile.mkdtemp()
    p = subprocess.run([sys.executable, "-c", CODE, v, d], capture_output=True, text=True, timeout=120)
    print(f"== {v}: rc={p.returncode}\n{p.stdout[-800:]}\n{p.stderr[-600:] if p.returncode else ''}", flush=True)
