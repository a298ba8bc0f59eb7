import os,socket,tempfile,ctypes as C,errno,torch,torch.distributed as dist
from datetime import timedelta
import torch.testing._internal.distributed.fake_pg
import torch.distributed._symmetric_memory as sm
torch.cuda.set_device(0);torch.zeros(1,device="cuda")
st=dist.FileStore(tempfile.mkdtemp()+"/s",1);st.set_timeout(timedelta(seconds=60))
dist.init_process_group("fake",store=st,rank=0,world_size=1)
L=C.CDLL("libseccomp.so.2");L.seccomp_init.restype=C.c_void_p
class A(C.Structure):_fields_=[("a",C.c_uint),("o",C.c_int),("x",C.c_uint64),("y",C.c_uint64)]
L.seccomp_rule_add.argtypes=[C.c_void_p,C.c_uint32,C.c_int,C.c_uint,A]
c=L.seccomp_init(0x7fff0000);d=0x50000|13;n=L.seccomp_syscall_resolve_name(b"socket")
for f in(2,10):print("rule",L.seccomp_rule_add(c,d,n,1,A(0,4,f,0)))
L.seccomp_attr_set.argtypes=[C.c_void_p,C.c_int,C.c_uint32];print("tsync",L.seccomp_attr_set(c,4,1));print("load",L.seccomp_load(C.c_void_p(c)))
def t(k,f):
 try:print("OK",k,f())
 except Exception as e:print("EXC",k,type(e).__name__,str(e)[:200])
t("inet",lambda:socket.socket())
t("unix",lambda:socket.socket(socket.AF_UNIX).close())
def r():
 b=sm.empty(1<<20,dtype=torch.float32,device="cuda");h=sm.rendezvous(b,dist.group.WORLD);h.barrier(channel=0);return h.world_size
t("rendezvous",r)
def o():
 b=sm.empty(4096,dtype=torch.bfloat16,device="cuda");sm.rendezvous(b,dist.group.WORLD);b.normal_()
 y=torch.ops.symm_mem.one_shot_all_reduce(b,"sum",dist.group.WORLD.group_name);torch.cuda.synchronize();return float((y-b).abs().max())
t("one_shot",o)
def g():
 G=dist.new_group(backend="gloo");x=torch.ones(4);dist.all_reduce(x,group=G);return "GLOO RAN"
t("gloo",g)
