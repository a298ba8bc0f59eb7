"""Arguments and outputs as JSON trees whose tensor leaves live in the arena.

A problem's arguments and a candidate's outputs may nest: tensors, numbers, strings, None,
dtypes, lists, tuples and dicts. On the wire every container is tagged, so lists stay lists
and tuples stay tuples:
  {"L": [...]} list   {"U": [...]} tuple   {"D": [[key, value], ...]} dict   {"Y": "bfloat16"}
  {"T": {...}} tensor (inputs: where it lies in the arena; outputs: which slot it went to)
  {"X": "TypeName"} an output value of a type that cannot be checked
Plain JSON scalars stand for themselves. A tree from a worker is checked for size and shape
before anything is built from it (`check_tree`).

Arguments only (the judge's trees, never a worker's: check_tree refuses these tags), for
upstream PKB problems whose inputs hold more than tensors (upstream 21, 22 and 55-57 pass
process groups, 31, 32 and 49-51 nn.Linear layers, 62 a sparse matrix):
  {"G": [0, 2]}                     the process group of these global ranks (the worker makes
                                    its own: worker/groups.py)
  {"M": ["Linear", w, b, grad]}     an nn.Linear on the tensors w and b (b may be None)
  {"S": [indices, values, shape]}   a sparse COO tensor
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.distributed as dist

from pkb_ray.engine.wire.frames import ProtocolError

DTYPES: dict[str, torch.dtype] = {
    name: getattr(torch, name) for name in (
        "float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
        "bool", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2")
    if hasattr(torch, name)
}
MAX_NODES = 100_000
MAX_DEPTH = 32
MAX_STR = 10_000


def dtype_name(dtype: torch.dtype) -> str:
    name = str(dtype).removeprefix("torch.")
    if name not in DTYPES:
        raise ValueError(f"dtype {dtype} cannot cross the boundary")
    return name


def dtype_of(name: Any) -> torch.dtype:
    if not isinstance(name, str) or name not in DTYPES:
        raise ProtocolError(f"unknown dtype {name!r}")
    return DTYPES[name]


def encode(obj: Any, tensor: Callable[[torch.Tensor], dict], *, strict: bool = True) -> Any:
    """The tree of `obj`; `tensor(t)` gives each tensor leaf's payload. strict=False turns a
    value of an unsupported type into {"X": type name} instead of raising (outputs)."""
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj
    if isinstance(obj, torch.Tensor):
        if strict and obj.layout == torch.sparse_coo:
            obj = obj.coalesce()
            return {"S": [encode(obj.indices(), tensor), encode(obj.values(), tensor), list(obj.shape)]}
        return {"T": tensor(obj)}
    if strict and type(obj) is torch.nn.Linear:  # a subclass may compute something else
        return {"M": ["Linear", encode(obj.weight, tensor), encode(obj.bias, tensor),
                      bool(obj.weight.requires_grad)]}
    if strict and isinstance(obj, dist.ProcessGroup):
        return {"G": list(dist.get_process_group_ranks(obj))}
    if isinstance(obj, torch.dtype):
        return {"Y": dtype_name(obj)}
    if isinstance(obj, list):
        return {"L": [encode(v, tensor, strict=strict) for v in obj]}
    if isinstance(obj, tuple):
        return {"U": [encode(v, tensor, strict=strict) for v in obj]}
    if isinstance(obj, dict):
        for k in obj:
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                if strict:
                    raise ValueError(f"dict key {k!r}: only str and int keys cross the boundary")
                return {"X": f"dict with a {type(k).__name__} key"}
        return {"D": [[k, encode(v, tensor, strict=strict)] for k, v in obj.items()]}
    if strict:
        raise ValueError(f"a value of type {type(obj).__name__} cannot cross the boundary")
    return {"X": type(obj).__name__}


def check_tree(tree: Any) -> None:
    """Raise ProtocolError unless `tree` is a well-formed tree of bounded size."""
    count = 0

    def walk(node: Any, depth: int) -> None:
        nonlocal count
        count += 1
        if count > MAX_NODES or depth > MAX_DEPTH:
            raise ProtocolError("tree too large or too deep")
        if node is None or isinstance(node, (bool, int, float)):
            return
        if isinstance(node, str):
            if len(node) > MAX_STR:
                raise ProtocolError("string too long")
            return
        if not isinstance(node, dict) or len(node) != 1:
            raise ProtocolError(f"malformed tree node {str(node)[:80]!r}")
        (tag, body), = node.items()
        if tag in ("L", "U"):
            if not isinstance(body, list):
                raise ProtocolError(f"{tag} needs a list")
            for v in body:
                walk(v, depth + 1)
        elif tag == "D":
            if not isinstance(body, list):
                raise ProtocolError("D needs a list of pairs")
            for pair in body:
                if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], (str, int))
                        and not isinstance(pair[0], bool)):
                    raise ProtocolError("D needs [key, value] pairs with str or int keys")
                walk(pair[1], depth + 1)
        elif tag in ("T",):
            if not isinstance(body, dict):
                raise ProtocolError("T needs an object")
        elif tag in ("Y", "X"):
            if not isinstance(body, str) or len(body) > 200:
                raise ProtocolError(f"{tag} needs a short string")
        else:
            raise ProtocolError(f"unknown tree tag {tag!r}")

    walk(tree, 0)


def decode(tree: Any, tensor: Callable[[dict], Any], group: Callable[[list[int]], Any] | None = None) -> Any:
    """Build the value of a checked tree; `tensor(payload)` gives each tensor leaf and
    `group(ranks)` each process group (arguments only: without it a "G" is refused)."""
    if tree is None or isinstance(tree, (bool, int, float, str)):
        return tree
    (tag, body), = tree.items()
    if tag == "L":
        return [decode(v, tensor, group) for v in body]
    if tag == "U":
        return tuple(decode(v, tensor, group) for v in body)
    if tag == "D":
        return {k: decode(v, tensor, group) for k, v in body}
    if tag == "T":
        return tensor(body)
    if tag == "Y":
        return dtype_of(body)
    if tag == "G":
        if group is None:
            raise ProtocolError("a process group where none may be")
        return group(list(body))
    if tag == "M":
        kind, w, b, grad = body
        if kind != "Linear":
            raise ProtocolError(f"no layer of kind {kind!r} crosses the boundary")
        return _linear(decode(w, tensor, group), decode(b, tensor, group), bool(grad))
    if tag == "S":
        indices, values, shape = body
        return torch.sparse_coo_tensor(decode(indices, tensor, group), decode(values, tensor, group),
                                       list(shape), is_coalesced=True)
    return Unsupported(body)


def _linear(weight: torch.Tensor, bias: torch.Tensor | None, grad: bool) -> torch.nn.Linear:
    """An nn.Linear on the arena's tensors as they lie (Linear() would allocate and initialise
    its own, and the call would then read those)."""
    layer = torch.nn.Linear.__new__(torch.nn.Linear)
    torch.nn.Module.__init__(layer)
    layer.out_features, layer.in_features = weight.shape
    layer.weight = torch.nn.Parameter(weight, requires_grad=grad)
    layer.bias = torch.nn.Parameter(bias, requires_grad=grad) if bias is not None else None
    return layer


@dataclass(frozen=True)
class Unsupported:
    """An output value the judge cannot check; it compares unequal to everything."""
    type_name: str

    def __repr__(self) -> str:
        return f"<a {self.type_name} value>"


@dataclass(frozen=True)
class Mismatch:
    """A tensor output that could not be copied into the slot the reference's shape fixed."""
    what: str

    def __repr__(self) -> str:
        return f"<tensor {self.what}>"


def tensor_leaves(obj: Any, args: bool = False) -> list[torch.Tensor]:
    """Tensor leaves of a value, in the order encode() visits them; args: of a problem's
    arguments (a layer's weights and a sparse matrix's indices and values count too)."""
    out: list[torch.Tensor] = []
    encode(obj, lambda t: out.append(t) or {}, strict=args)
    return out
