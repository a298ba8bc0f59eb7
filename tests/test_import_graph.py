"""pkb_ray's import graph: every import of every module, those inside functions included,
runs down the declared layers, and no modules import each other in a circle.

An import inside a function still ties its module to the one it names (it only loads
later), so it is read like any other: 4 arrows running back up and 2 circles hid in 132
function-level imports once. `if TYPE_CHECKING:` blocks are read too: an annotation that
names a higher layer is a dependency all the same. Inside the engine, each package runs in
one process and reaches only its side (SIDES).
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "pkb_ray"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("pkb_ray", "pkb_ray.records", "pkb_ray.config", "pkb_ray.console"),
    ("pkb_ray.store", "pkb_ray.problems"),
    ("pkb_ray.engine",),
    ("pkb_ray.selfcheck", "pkb_ray.generation"),
    ("pkb_ray.agent",),
    ("pkb_ray.modes",),
    ("pkb_ray.report",),
    ("pkb_ray.tracking",),
    ("pkb_ray.driver",),
    ("pkb_ray.cli",),
)
"""Lowest first. A module may import its own unit (a package or a top-level module) and
units of lower layers only; units of one layer stay apart. Each package's __init__
docstring says the same in words, and docs/design.md draws it."""


def _module_name(path: Path, pkg: Path = PKG) -> str:
    parts = path.relative_to(pkg.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, pkg: Path = PKG) -> set[str]:
    """Every pkb_ray module `path` names in an import statement, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module_name(path, pkg).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out.add(mod)
            out |= {f"{mod}.{a.name}" for a in node.names}  # `from pkg import module`
    return {m for m in out if m == "pkb_ray" or m.startswith("pkb_ray.")}


def _graph(pkg: Path = PKG) -> dict[str, set[str]]:
    files = {_module_name(p, pkg): p for p in pkg.rglob("*.py")}
    return {name: {m for m in _imports(p, pkg) if m in files and m != name}
            for name, p in files.items()}


def _unit(module: str) -> str:
    """The layer's unit a module belongs to: its package under pkb_ray, or itself."""
    return ".".join(module.split(".")[:2])


def _layer_of(unit: str) -> int | None:
    return next((i for i, units in enumerate(LAYERS) if unit in units), None)


def _violations(graph: dict[str, set[str]]) -> list[str]:
    """Each import that is not down the layers, as `a -> b (why)`."""
    out = []
    for a in sorted(graph):
        ua = _unit(a)
        la = _layer_of(ua)
        if la is None:
            out.append(f"{a}: its unit {ua} is in no layer (declare it in LAYERS)")
            continue
        for b in sorted(graph[a]):
            ub = _unit(b)
            lb = _layer_of(ub)
            if ub == ua or (lb is not None and lb < la):
                continue
            why = "same layer" if lb == la else "runs back up" if lb is not None else "into no layer"
            out.append(f"{a} -> {b} ({why})")
    return out


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            # a package's __init__ importing its own submodules is not a cycle of theirs
            if n.startswith(m + ".") or m.startswith(n + "."):
                continue
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_the_checker_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_checker_finds_arrows_up_across_and_outside_the_layers():
    graph = {"pkb_ray.engine.node.judge_node": {"pkb_ray.records", "pkb_ray.engine.wire.frames",
                                     "pkb_ray.agent.executor"},
             "pkb_ray.agent.executor": {"pkb_ray.engine.node.judge_node"},
             "pkb_ray.engine.wire.frames": set(),
             "pkb_ray.generation.client": {"pkb_ray.selfcheck.check"},
             "pkb_ray.selfcheck.check": set(),
             "pkb_ray.records": set(),
             "pkb_ray.newpkg.x": set()}
    assert _violations(graph) == [
        "pkb_ray.engine.node.judge_node -> pkb_ray.agent.executor (runs back up)",
        "pkb_ray.generation.client -> pkb_ray.selfcheck.check (same layer)",
        "pkb_ray.newpkg.x: its unit pkb_ray.newpkg is in no layer (declare it in LAYERS)",
    ]


def test_an_import_inside_a_function_is_read(tmp_path):
    """A deliberate break: a copy of the package where the engine imports the driver inside
    a function body. The reader must see it, and the layer check must name it."""
    copy = tmp_path / "pkb_ray"
    shutil.copytree(PKG, copy, ignore=shutil.ignore_patterns("__pycache__"))
    victim = copy / "engine" / "roofline.py"
    victim.write_text(victim.read_text() + "\n\ndef _late():\n    from pkb_ray.driver import sweep\n"
                      "    return sweep\n")
    graph = _graph(copy)
    assert "pkb_ray.driver.sweep" in graph["pkb_ray.engine.roofline"]
    assert "pkb_ray.engine.roofline -> pkb_ray.driver.sweep (runs back up)" in _violations(graph)
    assert "pkb_ray.driver.sweep" not in _graph(PKG)["pkb_ray.engine.roofline"]


def test_every_import_runs_down_the_layers():
    bad = _violations(_graph())
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def test_no_import_cycles():
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_loader_and_pkb_import_are_apart():
    graph = _graph()
    assert "pkb_ray.problems.pkb_import" in graph["pkb_ray.problems.loader"]
    assert "pkb_ray.problems.loader" not in graph["pkb_ray.problems.pkb_import"]


def test_a_judge_imports_no_hydra():
    """A judge reads the config schema's timing and timeout sections; Hydra is the driver's
    (and not installed on every GPU machine): the judge's modules must not pull it in."""
    import subprocess
    import sys

    code = ("import sys, pkb_ray.engine.judge.main, pkb_ray.engine.judge.session, pkb_ray.engine.request; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'hydra', 'ray', 'mlflow', 'litellm'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=PKG.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


ENGINE = "pkb_ray.engine"
SIDES: dict[str, tuple[str, tuple[str, ...]]] = {
    f"{ENGINE}.worker": ("only", (f"{ENGINE}.worker", f"{ENGINE}.protocol", f"{ENGINE}.wire")),
    f"{ENGINE}.judge": ("never", (f"{ENGINE}.node", f"{ENGINE}.worker", f"{ENGINE}.launch")),
    f"{ENGINE}.node": ("never", (f"{ENGINE}.worker", f"{ENGINE}.judge")),
    f"{ENGINE}.launch": ("never", (f"{ENGINE}.node", f"{ENGINE}.judge", f"{ENGINE}.worker")),
    f"{ENGINE}.protocol": ("only", (f"{ENGINE}.protocol", f"{ENGINE}.wire", f"{ENGINE}.request", "pkb_ray.config")),
    f"{ENGINE}.wire": ("only", (f"{ENGINE}.wire",)),
}
"""The engine by process: what the modules of each package may reach, directly or through
another. `only`: nothing but these; `never`: none of these. A worker (the sandbox) reaches
only what crosses the boundary (protocol/, wire/) and itself: not the launcher (800 lines
of the node's that would load in every sandboxed process), the judge, or the node. The node
never loads a worker or a judge module (it starts them as processes), a judge never loads
the node's or a worker's, and the shared floors (protocol/, wire/) reach no process."""


def _reach(graph: dict[str, set[str]], start: str) -> dict[str, str]:
    """Every module `start` imports at any remove, each with the module that named it."""
    seen: dict[str, str] = {}
    todo = [start]
    while todo:
        a = todo.pop()
        for b in graph.get(a, ()):
            if b not in seen and b != start:
                seen[b] = a
                todo.append(b)
    return seen


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _side_violations(graph: dict[str, set[str]]) -> list[str]:
    """Each module that reaches what its package may not, as `a -> b (via c)`."""
    out = []
    for side, (rule, packages) in SIDES.items():
        for mod in sorted(m for m in graph if _within(m, (side,))):
            for b, via in sorted(_reach(graph, mod).items()):
                if _within(b, packages) != (rule == "only"):
                    out.append(f"{mod} -> {b} (via {via})")
    return out


def test_each_process_reaches_only_its_side():
    bad = _side_violations(_graph())
    assert not bad, "a module reaches across the engine's process sides:\n" + "\n".join(bad)


def _broken(tmp_path, path: str, old: str, new: str) -> dict[str, set[str]]:
    """The import graph of a copy of the package with one line of one module changed."""
    copy = tmp_path / "pkb_ray"
    shutil.copytree(PKG, copy, ignore=shutil.ignore_patterns("__pycache__"))
    victim = copy / path
    text = victim.read_text()
    assert old in text, (path, old)
    victim.write_text(text.replace(old, new, 1))
    return _graph(copy)


def test_a_worker_module_importing_the_launcher_or_the_node_is_named(tmp_path):
    """A deliberate break: the zygote reads its start record through the launcher (as when
    records and launcher were one module), and so reaches the node's side."""
    bad = _side_violations(_broken(tmp_path, "engine/worker/zygote.py", "from pkb_ray.engine.protocol.start import",
                                   "from pkb_ray.engine.launch import"))
    assert "pkb_ray.engine.worker.zygote -> pkb_ray.engine.launch (via pkb_ray.engine.worker.zygote)" in bad
    assert any(b.startswith("pkb_ray.engine.worker.zygote -> pkb_ray.engine.launch.process") for b in bad)
    bad = _side_violations(_broken(tmp_path / "2", "engine/worker/reap.py",
                                   "from pkb_ray.engine.protocol.rank_ends import RankEnd",
                                   "from pkb_ray.engine.node.verdict import RankEnd"))
    assert "pkb_ray.engine.worker.reap -> pkb_ray.engine.node.verdict (via pkb_ray.engine.worker.reap)" in bad


def test_a_node_module_importing_a_worker_module_is_named(tmp_path):
    """A deliberate break: the node reads the zygote's log through the worker's reaper (as
    it did when the log format lived there)."""
    bad = _side_violations(_broken(tmp_path, "engine/node/judge_node.py", "from pkb_ray.engine.protocol.rank_ends import",
                                   "from pkb_ray.engine.worker.reap import"))
    assert "pkb_ray.engine.node.judge_node -> pkb_ray.engine.worker.reap (via pkb_ray.engine.node.judge_node)" in bad


def test_a_judge_module_importing_the_node_is_named(tmp_path):
    """A deliberate break: the judge's sampling reads the median's confidence from the node's
    statistics (as it did when both lived in judge/timing/)."""
    bad = _side_violations(_broken(tmp_path, "engine/judge/timing/sampling.py",
                                   "from pkb_ray.engine.protocol.timing import",
                                   "from pkb_ray.engine.node.timing_stats import rel_ci_of_median\n"
                                   "from pkb_ray.engine.protocol.timing import"))
    assert ("pkb_ray.engine.judge.timing.sampling -> pkb_ray.engine.node.timing_stats "
            "(via pkb_ray.engine.judge.timing.sampling)") in bad
