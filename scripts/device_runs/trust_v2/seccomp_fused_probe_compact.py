import os,socket,tempfile,ctypes as C,torch,torch.distributed as dist
from datetime import timedelta
import torch.testing._internal.distributed.fake_pg
import torch.distributed._symmetric_memory as sm
torch.cuda.set_device(0);torch.zeros(1,device="cuda")
st=dist.FileStore(tempfile.mkdtemp()+"/s",1);st.set_timeout(timedelta(seconds=60))
dist.init_process_group("fake",store=st,rank=0,world_size=1)
L=C.CDLL("libseccomp.so.2");L.seccomp_init.restype=C.c_void_p
class A(C.Structure):_fields_=[("a",C.c_uint),("o",C.c_int),("x",C.c_uint64),("y",C.c_uint64)]
L.seccomp_rule_add.argtypes=[C.c_void_p,C.c_uint32,C.c_int,C.c_uint,A]
c=L.seccomp_init(0x7fff0000);n=L.seccomp_syscall_resolve_name(b"socket")
for f in(2,10):L.seccomp_rule_add(c,0x5000d,n,1,A(0,4,f,0))
L.seccomp_attr_set.argtypes=[C.c_void_p,C.c_int,C.c_uint32];L.seccomp_attr_set(c,4,1);print("load",L.seccomp_load(C.c_void_p(c)))
G=dist.group.WORLD.group_name
def t(k,f):
 try:print("OK",k,f())
 except Exception as e:print("EXC",k,type(e).__name__,str(e)[:300])
t("inet",lambda:socket.socket())
x=torch.randn(256,512,device="cuda",dtype=torch.bfloat16);w=torch.randn(512,256,device="cuda",dtype=torch.bfloat16)
def en():
 if hasattr(sm,"enable_symm_mem_for_group"):sm.enable_symm_mem_for_group(G)
 return 1
t("enable",en)
O=torch.ops.symm_mem
for k in("fused_all_gather_matmul","fused_matmul_reduce_scatter"):print(getattr(O,k).default._schema)
def ag():
 _,(o,)=O.fused_all_gather_matmul(x,[w],0,G);torch.cuda.synchronize();return float((o-x@w).abs().max())
t("fused_all_gather_matmul",ag)
def rs():
 o=O.fused_matmul_reduce_scatter(x,w,"sum",0,G);torch.cuda.synchronize();return float((o-x@w).abs().max())
t("fused_matmul_reduce_scatter",rs)
