"""One GPU group's judges, kept across candidates, and a fresh sandbox per candidate.

    node = JudgeNode(NodeSpec(device="cuda", world_size=2, gpus=(0, 1), ...))
    outcome = node.run(JudgeJob(...), extensions_from, start_s, deadline_s)

Runs in the node's process, which never imports candidate code and never touches CUDA. It starts
one judge per GPU (fresh interpreters, allow-listed environment), a TCP store they meet on
and the page their own launch gate polls. For each candidate it takes a sandbox that was
started ahead (its zygote has already imported torch: 1-3 s off the candidate's clock) and
starts the next one, hands each judge its end of the channel to its worker, and waits. The
first failure a judge reports stops the sandbox at once, so the other ranks' workers do
not hang on a dead peer until their phase limit, and a rank the node stopped itself is
never named as the cause (verdict.py).
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import threading
import time
import uuid
import dataclasses
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pkb_ray.engine import launch, nccl_stub
from pkb_ray.engine.node import cpu_pins, paces
from pkb_ray.engine.protocol.control import JudgeEvent, JudgeJob, JudgeReady, JudgeReport, Quit
from pkb_ray.engine.protocol import codec
from pkb_ray.engine.wire import frames
from pkb_ray.engine.wire.gate import GatePage
from pkb_ray.engine.protocol.rank_ends import ends_in

JUDGE_START_S = 180.0
GRACE_S = 0.5
"""After the first failure, how long reports from other ranks may still name the cause."""


class JudgesBroken(RuntimeError):
    """A judge died or stopped answering: the node restarts them all."""


@dataclass(frozen=True)
class NodeSpec:
    device: str
    world_size: int
    gpus: tuple[int, ...] | None
    """The GPUs its judges and sandboxes use, by the node's indices (None: those this
    process sees)."""
    plan: launch.SandboxPlan
    torch_cuda_arch_list: str
    cache_dirs: tuple[str, ...]
    """Directories no worker may see (the caches, the tracking store, the sweeps)."""
    gate_timeout_us: int = 100_000
    group_timeout_s: float = 600.0
    nccl_stub: tuple[tuple[str, str], ...] = ()
    """(real libnccl path, stub path) pairs: what a guarded sandbox sees instead of NCCL."""
    cores: tuple[cpu_pins.RankCores, ...] = ()
    """Per rank, the cores of its judge and of its rank in each worker (cpu_pins.py); () for
    none."""
    setup_cores: tuple[int, ...] = ()
    """Where a pinned worker's rank sets up before it moves to its core (cpu_pins.unpinned)."""


@dataclass
class NodeOutcome:
    reports: dict[int, JudgeReport] = field(default_factory=dict)
    events: list[tuple[float, int, JudgeEvent]] = field(default_factory=list)
    """(seconds since start, rank, event) in the order the node received them."""
    stopped_at: float | None = None
    """When the node stopped the sandbox (after the first failure), seconds since start."""
    ran_out_s: float | None = None
    """The evaluation's limit, where the node stopped the sandboxes because it had passed:
    the workers the judges then saw end were stopped, not failed (verdict.py)."""
    logs: dict[str, str] = field(default_factory=dict)
    nccl_refused: str = ""
    """NCCL entry points the stub refused (the sandbox's marker file; empty if none)."""
    harness_error: str = ""
    resource_limit: str = ""
    """The bounds the candidate's sandbox reached (launch/bounds.py), in words; empty: none."""
    bounds: str = ""
    """The candidate sandbox's bounds as held and the GPUs it holds, for the result's
    `sandbox` field."""
    peaks: dict[str, int] = field(default_factory=dict)
    """The most processes and bytes the candidate's sandbox held at once (where its group
    counts them): what the bounds are sized against."""
    store_bytes: int = 0
    """The size the ranks' store file reached: the one channel between ranks left open (on
    CPU it stands in for symmetric memory; on GPUs symmetric memory trades its handles
    through it), measured so that its use can be flagged."""
    wall_s: float = 0.0
    sandbox_wait_s: float = 0.0
    handout_s: float = 0.0
    """Seconds from the run's start until every judge had its job (the sandboxes taken,
    sized and ready): the node's own part of the evaluation's start."""
    sandbox_age_s: float = 0.0
    """How long the candidate's sandbox had been starting when it was taken (about 0: none
    was ahead): the head start its set-up had."""
    sandbox_taken: str = ""
    """How the candidate's sandbox came: "ahead", or "started: " and why none ahead served."""
    paces_apart: float | None = None
    """How far the candidate's and the reference's workers' paces were apart (the largest
    |log ratio| over ranks) where the node knew both when it chose them (node/paces.py)."""


class _Judge:
    def __init__(self, rank: int, popen: subprocess.Popen, sock: socket.socket) -> None:
        self.rank, self.popen, self.sock = rank, popen, sock
        self.reader = frames.FrameReader(sock)


class _Sandbox:
    """A started sandbox and the judges' ends of its channels."""

    def __init__(self, proc: launch.SandboxProcess, ends: list[socket.socket], guard: bool,
                 pace: paces.PaceQuery | None = None) -> None:
        self.proc, self.ends, self.guard = proc, ends, guard
        self.pace = pace
        """Its ranks' CUDA contexts' paces, asked while it waits ahead (node/paces.py)."""


class JudgeNode:
    def __init__(self, spec: NodeSpec) -> None:
        self.spec = spec
        self.gpus = launch.first_gpus(spec.gpus, spec.world_size) if spec.device == "cuda" else ()
        """The node's GPUs its judges and sandboxes hold."""
        self.visible = spec.gpus if spec.gpus is not None else (self.gpus or None)
        """What its children's CUDA_VISIBLE_DEVICES names (`pkb eval` on a bigger node with
        none named: the first world_size GPUs)."""
        self.judges: list[_Judge] = []
        self.store = None
        self.ref_page_fd: int | None = None
        self.ahead: dict[tuple[str, bool], list[_Sandbox]] = {}
        """Sandboxes started ahead, oldest first, by role and guard setting: "candidate"
        (guarded or not, as the job says) and "reference" (the trusted worker the reference
        is timed in, never guarded). Where evaluations overlap their successors' start (GPU
        nodes) two are kept ahead per key (paces.SPARES where spares are matched by pace):
        a candidate's sandbox takes 5-6 s to set up on
        4 x H200 (torch's import, the CUDA context, the first symmetric allocation:
        worker/rank.py), more than a short evaluation lasts; with one ahead the next
        evaluation waited 0.5-1.6 s for it (bench_eval at ws 2, `start`).
        Kept per guard setting: a sweep of a guarded model beside the unguarded reference
        model alternates the two on one node, and a sandbox of the other setting cannot be
        turned into this one (the guard is in its mounts). Thrown away at each switch, the
        evaluation after it waited 1.3-2.0 s for a new one, 11 of 20 in bench_groups_gpu's
        grouped throughput phase (ws 2, 4 x H200)."""
        self._spawner: ThreadPoolExecutor | None = None
        """The thread every sandbox of this node is started from (_spawn says why)."""
        self._unfit: dict[tuple[str, bool], str] = {}
        """Why the last spare of a kind discarded while choosing by pace could not serve."""

    # ------------------------------------------------------------------ judges
    def start(self) -> None:
        if self.judges:
            return
        import torch.distributed as dist  # the store lives in this process, outside every sandbox

        ws = self.spec.world_size
        self.store = dist.TCPStore("127.0.0.1", 0, ws, True, wait_for_workers=False)
        self.ref_page_fd = GatePage.create_fd()
        env = launch.child_env(self.spec.device, ws, self.visible, sandboxed=False)
        for r in range(ws):
            ours, theirs = socket.socketpair()
            start = launch.JudgeStart(rank=r, world_size=ws, device=self.spec.device, store_port=self.store.port,
                                     control_fd=theirs.fileno(), gate_fd=self.ref_page_fd,
                                     gate_timeout_us=self.spec.gate_timeout_us,
                                     group_timeout_s=self.spec.group_timeout_s,
                                     core=self.spec.cores[r].judge if self.spec.cores else -1)
            # A judge outlives no evaluator; off a main thread (where PR_SET_PDEATHSIG would
            # follow the thread) a judge sees its control channel close and exits.
            popen = launch.start_trusted(
                launch.SpawnSpec("pkb_ray.engine.judge.main", start, env, fds=(theirs.fileno(), self.ref_page_fd)),
                tie_to_parent=threading.current_thread() is threading.main_thread())
            theirs.close()
            self.judges.append(_Judge(r, popen, ours))
        for j in self.judges:
            try:
                obj, _ = j.reader.recv(timeout_s=JUDGE_START_S)
                codec.decode(obj, (JudgeReady,))
            except (frames.FrameTimeout, frames.ProtocolError) as e:
                self.stop()
                raise JudgesBroken(f"judge {j.rank} did not start: {e}") from e

    def stop(self) -> None:
        for j in self.judges:
            try:
                frames.send(j.sock, codec.to_wire(Quit()))
            except OSError:
                pass
        for j in self.judges:
            try:
                j.popen.wait(5)
            except subprocess.TimeoutExpired:
                j.popen.kill()
                j.popen.wait(5)
            j.sock.close()
        self.judges = []
        if self.ref_page_fd is not None:
            os.close(self.ref_page_fd)
            self.ref_page_fd = None
        self.store = None
        for sb in self.sandboxes_ahead():
            self._discard(sb)
        self.ahead = {}
        if self._spawner is not None:  # its thread's end ends what it started: nothing is left
            self._spawner.shutdown(wait=False)
            self._spawner = None

    # ------------------------------------------------------------------ sandboxes
    def _new_sandbox(self, role: str, guard: bool) -> _Sandbox:
        spec = self.spec
        pairs = [socket.socketpair() for _ in range(spec.world_size)]
        fds = [b.fileno() for _, b in pairs]
        # The ranks set up their device and group as soon as they exist (engine/worker/rank.py).
        start = launch.WorkerStart(device=spec.device, world_size=spec.world_size, guard=guard, channel_fds=fds,
                                  cores=[c.workers for c in spec.cores], setup_cores=list(spec.setup_cores),
                                  yields=cpu_pins.yields(spec.device, role, pinned=bool(spec.cores)))
        env = launch.child_env(spec.device, spec.world_size, self.visible, torch_cuda_arch_list=spec.torch_cuda_arch_list)
        box = launch.Sandboxed(spec.plan, spec.cache_dirs, gpu=spec.device == "cuda",
                               binds=dict(spec.nccl_stub) if guard else {}, limits=self._bounds(0), gpus=self.gpus,
                               cores=spec.setup_cores)
        proc = self._spawn(launch.SpawnSpec("pkb_ray.engine.worker.zygote", start, env, tuple(fds), box))
        for _, b in pairs:
            b.close()
        ends = [a for a, _ in pairs]
        pace = paces.PaceQuery(ends, spec.device, guard) if spec.device in paces.MATCHED_ON else None
        return _Sandbox(proc, ends, guard, pace)

    def _spawn(self, spec: launch.SpawnSpec) -> launch.SandboxProcess:
        """Start a sandbox from this node's own thread. bubblewrap's --die-with-parent follows
        the thread that forked it (PR_SET_PDEATHSIG), not the process: a sandbox started ahead
        from an evaluation's thread died with that thread, and the next evaluation, on another
        thread, started one on the spot (every phase of bench_groups_gpu runs on threads of its
        own: 1.3-2.0 s each on 4 x H200). The node's thread lives as long as its sandboxes may."""
        if self._spawner is None:
            self._spawner = ThreadPoolExecutor(1, thread_name_prefix="pkb-sandboxes")
        return self._spawner.submit(launch.start, spec).result()

    def _bounds(self, footprint_bytes: int) -> launch.Bounds:
        ws = self.spec.world_size
        return launch.sandbox_bounds(ws, footprint_bytes, launch.node_groups(self.spec.device, ws))

    @staticmethod
    def _discard(sb: _Sandbox) -> None:
        for s in sb.ends:
            s.close()
        sb.proc.cleanup()

    def _take_sandbox(self, role: str, guard: bool) -> tuple[_Sandbox, str]:
        """A sandbox for `role`, and how it came: "ahead", or started now and why (what a
        harness tuner needs to find where evaluations wait for one)."""
        key = (role, guard)
        live = self._live(key)
        why = self._unfit.pop(key, "none was ahead")
        if live:
            self.ahead[key].remove(live[0])
            return live[0], "ahead"
        return self._new_sandbox(role, guard), f"started: {why}"

    def _unfit_why(self, spare: _Sandbox) -> str:
        """Why a spare cannot serve ("" if it can). A spare whose rank already ended is no
        sandbox: its ranks set up their device as soon as they were forked, so one started
        while the previous evaluation filled the GPU can die there; taken, it would make the
        next evaluation a harness_error ("the worker ended during start-up")."""
        if not spare.proc.alive():
            return "the one ahead had exited"
        if ends_in(spare.proc.log_tail("zygote.log", 2000)):
            return "a rank of the one ahead had ended"
        if spare.pace is not None and spare.pace.broken:
            return "the one ahead did not answer its Hello"
        return ""

    def _live(self, key: tuple[str, bool]) -> list[_Sandbox]:
        """The spares of `key` that can still serve, oldest first (the others discarded, and
        why kept for the sandbox_taken of the evaluation that then starts one)."""
        queue = self.ahead.get(key, [])
        keep = []
        for spare in queue:
            unfit = self._unfit_why(spare)
            if unfit:
                self._unfit[key] = unfit
                self._discard(spare)
            else:
                keep.append(spare)
        queue[:] = keep
        return keep

    def _take_matched(self, guard: bool, out: NodeOutcome) -> tuple[_Sandbox, _Sandbox] | None:
        """A spare candidate's sandbox and a spare reference's whose workers' paces agree
        (node/paces.py), or None where there is not a spare of each to choose from."""
        keys = (("candidate", guard), ("reference", False))
        if any(not self.ahead.get(k) or any(sb.pace is None for sb in self.ahead[k]) for k in keys):
            return None  # nothing to choose from, or spares of a device whose workers have no pace
        queries = [sb.pace for k in keys for sb in self._live(k) if sb.pace is not None]
        for q in queries:
            q.ask()
        paces.collect_all(queries, paces.ASK_WAIT_S)
        cands, refs = (self._live(k) for k in keys)  # less the spares that broke
        if not cands or not refs:
            return None
        known = lambda sb: sb.pace.known() if sb.pace is not None else None  # noqa: E731
        i, j = paces.choose([known(sb) for sb in cands], [known(sb) for sb in refs])
        sb, ref = cands[i], refs[j]
        self.ahead[keys[0]].remove(sb)
        self.ahead[keys[1]].remove(ref)
        out.paces_apart = paces.cost(known(sb), known(ref))
        out.sandbox_taken = "ahead"
        return sb, ref

    def sandboxes_ahead(self) -> list[_Sandbox]:
        return [sb for queue in self.ahead.values() for sb in queue]

    def prewarm(self, guard: bool = True, timed: bool = True) -> None:
        """Start the next evaluation's sandboxes now (their imports overlap whatever comes
        next): the candidate's and, for a timed one, the reference's. Those of the other
        guard setting are kept for when it comes back."""
        depth = paces.SPARES if self.spec.device in paces.MATCHED_ON else 2 if self._overlaps else 1
        for key in [("candidate", guard), *([("reference", False)] if timed else [])]:
            queue = self.ahead.setdefault(key, [])
            while len(queue) < depth:
                queue.append(self._new_sandbox(*key))

    # ------------------------------------------------------------------ one evaluation
    def run(self, job: JudgeJob, extensions_from: str | None, start_s: float, deadline_s: float,
            footprint_bytes: int = 0) -> NodeOutcome:
        """Evaluate one candidate: `job` as every judge gets it, but its eval_id and seed
        (made here: the seed from os.urandom, for this evaluation alone). `footprint_bytes`:
        what one call touches per rank, which sizes the sandboxes' memory (launch/bounds.py).

        The phases: take the sandboxes (and start the next ones), make them ready, hand
        every judge its job, collect the reports, wind up (logs, bounds, what the sandbox
        did)."""
        self.start()
        t0 = time.monotonic()
        out = NodeOutcome()
        sb, ref = self._take_sandboxes(job, footprint_bytes, out)
        boxes = [sb] + ([ref] if ref is not None else [])
        try:
            if self._make_ready(sb, boxes, extensions_from, start_s, out):
                eval_id = self._hand_out(job, sb, ref)
                out.handout_s = time.monotonic() - t0
                if self._overlaps:
                    # The next evaluation's sandboxes start while the judges work on this
                    # one, not before: two bubblewrap starts (forks of this process, mounts,
                    # groups) are tens of milliseconds the judges need not wait for.
                    self.prewarm(job.request.guard, job.timed)
                self._collect(out, eval_id, sb, t0, deadline_s, also_stop=ref)
                if out.stopped_at is None:
                    # Every judge reported before the sandbox had to be stopped; it is
                    # stopped below. On a loaded machine the zygote can write a dead
                    # worker's end (SIGSEGV, an exit code) after its judge reported.
                    self._await_ends(out, sb)
        except JudgesBroken as e:
            out.harness_error = str(e)
            for box in boxes:
                box.proc.kill()
            self.stop()  # started afresh for the next candidate
        finally:
            self._wind_up(out, job, sb, ref)
            out.wall_s = time.monotonic() - t0
        return out

    @property
    def _overlaps(self) -> bool:
        """Whether the next evaluation's sandboxes start while this one runs: where the GPU's
        ranks have cores of their own. On cpu the ranks share the machine's cores with
        everything, and two zygotes importing torch take cores from this evaluation's
        timing phase: references timed against themselves spread by 0.094 in log(speedup)
        with them overlapping, 0.066 with them started after (36 each, 2-core CPU machine,
        the same sweep time: node/cpu_pins.py)."""
        return self.spec.device != "cpu"

    def _take_sandboxes(self, job: JudgeJob, footprint_bytes: int,
                        out: NodeOutcome) -> tuple[_Sandbox, _Sandbox | None]:
        """The candidate's sandbox and, for a timed job, the reference's: a worker of the
        same kind, with the same sandbox, launch, gate and clock (judge/timing/__init__.py
        says why). Both were started before their problem was known: sized for it now."""
        pair = self._take_matched(job.request.guard, out) if job.timed else None
        if pair is not None:
            sb, ref = pair
        else:
            sb, out.sandbox_taken = self._take_sandbox("candidate", job.request.guard)
            ref = self._take_sandbox("reference", False)[0] if job.timed else None
        out.sandbox_age_s = time.monotonic() - sb.proc.started_at
        for box in [sb] + ([ref] if ref is not None else []):
            box.proc.bounds.resize(self._bounds(footprint_bytes))
        out.bounds = "; ".join(filter(None, [sb.proc.bounds.text, sb.proc.gpus_text]))
        return sb, ref

    def _make_ready(self, sb: _Sandbox, boxes: list[_Sandbox], extensions_from: str | None, start_s: float,
                    out: NodeOutcome) -> bool:
        """The prebuilt extensions copied in, every worker started up; False (and why, in
        `out`) where that failed."""
        if extensions_from and os.path.isdir(extensions_from):
            try:
                launch.copy_tree_in(extensions_from, os.path.join(sb.proc.workdir, "ext"), self.spec.plan)
            except launch.TreeRefused as exc:  # the sandbox's directory was tampered with before this candidate
                out.harness_error = f"the prebuilt extensions could not be copied in: {exc}"
                return False
        t_wait = time.monotonic()

        def not_started(box: _Sandbox, why: str = "") -> bool:
            what = "the sandbox" if box is sb else "the reference worker's sandbox"
            out.harness_error = (f"{what} did not start: {why}"
                                 + (box.proc.log_tail("zygote.log", 2000).strip() or "no output"))
            return False

        for box in boxes:
            if not box.proc.wait_ready(max(0.0, start_s - (time.monotonic() - t_wait))):
                return not_started(box)
        for box in boxes:
            # A Hello the node sent while it waited ahead (node/paces.py) is answered before
            # the judges get the channels: they must hold only what the judges ask.
            if box.pace is not None and not box.pace.settle(max(0.0, start_s - (time.monotonic() - t_wait))):
                return not_started(box, (box.pace.broken or "a rank did not answer its Hello") + "; ")
        out.sandbox_wait_s = time.monotonic() - t_wait
        return True

    def _hand_out(self, job: JudgeJob, sb: _Sandbox, ref: _Sandbox | None) -> str:
        """Every judge its job, this evaluation's id and secret, and its ends of the workers'
        channels and gate pages (the node keeps none of them); returns the evaluation's id."""
        boxes = [sb] + ([ref] if ref is not None else [])
        eval_id = uuid.uuid4().hex[:12]
        page_fds = [GatePage.create_fd() for _ in boxes]
        seed = int.from_bytes(os.urandom(8), "little") & ((1 << 62) - 1)
        msg = dataclasses.replace(job, eval_id=eval_id, seed=seed, candidate_root_pid=sb.proc.popen.pid,
                                  reference_root_pid=ref.proc.popen.pid if ref is not None else 0)
        try:
            for r, j in enumerate(self.judges):
                fds = [fd for box, page in zip(boxes, page_fds) for fd in (box.ends[r].fileno(), page)]
                frames.send(j.sock, codec.to_wire(msg), fds)
        except OSError as e:
            raise JudgesBroken(f"a judge is gone: {e}") from e
        finally:
            for fd in page_fds:
                os.close(fd)
            for box in boxes:
                for end in box.ends:
                    end.close()
        return eval_id

    def _wind_up(self, out: NodeOutcome, job: JudgeJob, sb: _Sandbox, ref: _Sandbox | None) -> None:
        """Stop the sandboxes; keep their logs, what they reached and held."""
        boxes = [sb] + ([ref] if ref is not None else [])
        for box in boxes:
            box.proc.kill(wait=False)
        if self.judges:  # after stop() the next run starts everything afresh
            # On cpu the next sandboxes start only now (_overlaps); on cuda they started
            # after the hand-out, unless this run ended before it.
            self.prewarm(job.request.guard, job.timed)
        names = ["zygote.log"] + [f"rank{r}.log" for r in range(self.spec.world_size)]
        out.logs = {name: sb.proc.log_tail(name) for name in names}
        if ref is not None and out.harness_error:
            # The reference worker runs harness code only: its logs explain a harness error.
            out.logs.update({f"reference {name}": ref.proc.log_tail(name) for name in names})
        out.nccl_refused = sb.proc.log_tail(nccl_stub.MARKER, 500).strip()
        out.store_bytes = launch.sandbox_file_bytes(sb.proc.workdir, "store")
        out.resource_limit = "; ".join(sb.proc.bounds.hit())
        out.peaks = sb.proc.bounds.group.peaks() if sb.proc.bounds.group is not None else {}
        if ref is not None and ref.proc.bounds.hit() and not out.harness_error:
            out.harness_error = "the reference worker reached its bound: " + "; ".join(ref.proc.bounds.hit())
        for box in boxes:
            box.proc.cleanup_later()

    @staticmethod
    def _await_ends(out: NodeOutcome, sb: _Sandbox) -> None:
        """Give the zygote the moment it needs to write how each gone worker ended (a signal,
        an exit code): milliseconds on an idle machine, more than 0.3 s on a 2-core one at
        load 7. The wait, up to 2 s a rank, ends at the line."""
        for _, rank, e in out.events:
            if e.worker_gone:
                _wait_for_end(sb.proc, rank, 2.0)

    def _collect(self, out: NodeOutcome, eval_id: str, sb: _Sandbox, t0: float, deadline_s: float,
                 also_stop: _Sandbox | None = None) -> None:
        by_sock = {j.sock.fileno(): j for j in self.judges}
        end = time.monotonic() + deadline_s
        stopped_extra = False
        kill_at: float | None = None
        while len(out.reports) < len(self.judges):
            if kill_at is not None and out.stopped_at is None and time.monotonic() >= kill_at:
                # How each gone rank ended is written before everything in the sandbox stops.
                self._await_ends(out, sb)
                sb.proc.kill()
                if also_stop is not None:
                    also_stop.proc.kill()
                out.stopped_at = time.monotonic() - t0
            left = end - time.monotonic()
            if left <= 0:
                if not stopped_extra:
                    # Judges wait on their workers with their own limits; stopping the sandbox
                    # ends those waits at once. Give them a moment to report.
                    sb.proc.kill()
                    if also_stop is not None:
                        also_stop.proc.kill()
                    out.stopped_at = out.stopped_at or time.monotonic() - t0
                    out.ran_out_s = deadline_s
                    end = time.monotonic() + 30
                    stopped_extra = True
                    continue
                raise JudgesBroken(f"judges did not report within {deadline_s:.0f} s")
            buffered = [fd for fd, j in by_sock.items() if j.reader.buffered()]
            wait_s = min(left, 1.0) if kill_at is None or out.stopped_at is not None else \
                max(0.0, min(left, kill_at - time.monotonic()))
            ready = buffered or select.select(list(by_sock), [], [], wait_s)[0]
            for fd in ready:
                j = by_sock[fd]
                try:
                    obj, _ = j.reader.recv(timeout_s=30)
                except (frames.ProtocolError, frames.FrameTimeout) as e:
                    raise JudgesBroken(f"judge {j.rank}: {e}") from e
                msg = codec.decode(obj, (JudgeEvent, JudgeReport))
                if getattr(msg, "eval_id", eval_id) != eval_id:
                    continue
                if isinstance(msg, JudgeEvent):
                    out.events.append((time.monotonic() - t0, j.rank, msg))
                    # A worker that ended once the node had stopped the sandboxes was stopped
                    # here: its judge's word for that (the reference worker "failed", set-up
                    # failed) is no failure of the judges. Taken for one, a candidate that
                    # fails on one rank while its peer's reference waits in a collective
                    # makes its failure the harness's (deferred, never recorded), and a limit
                    # that runs out in set-up reads as the reference failing.
                    if msg.failure == "harness_error" and not (out.stopped_at is not None and msg.worker_gone):
                        raise JudgesBroken(f"judge {j.rank}: {msg.message}")
                    if kill_at is None:
                        # Not at once: what other ranks report in the next moments is still
                        # their own doing (a rank that crashed while its peer returned garbage).
                        kill_at = time.monotonic() + GRACE_S / 2
                else:
                    out.reports[j.rank] = msg
            for j in self.judges:
                if j.popen.poll() is not None:
                    raise JudgesBroken(f"judge {j.rank} exited with code {j.popen.returncode}")


def _wait_for_end(proc: launch.SandboxProcess, rank: int, timeout_s: float) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if rank in ends_in(proc.log_tail("zygote.log", 2000)):
            return
        time.sleep(0.01)
