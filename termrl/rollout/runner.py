"""Run tasks x samples episodes of a policy, each in its own sandbox, on a worker pool.

- **Back-pressure:** at most ``workers`` episodes (so sandboxes) are alive at once; the
  next starts when one finishes.
- **Batching:** episode threads hand their turns to one ``Batcher``; it gives the policy
  every turn that is ready (up to ``max_batch``), so a local model generates for all
  live episodes together and an endpoint gets them concurrently. A ``continuous`` policy
  (``llamacpp:``, whose server batches by itself) gets each turn the moment it comes.
- **Failures:** an episode whose sandbox, policy or verifier fails is recorded with
  ``ending = "error"`` and the error; the run goes on.
- **Persistence and resume:** each finished episode is written to the run's
  ``TrajectoryStore`` at once (atomically). Episodes whose id is already stored are
  skipped, so a killed run resumes without redoing or duplicating any.
- **Accounting:** generation, environment, verification, detection and reward time go
  to the run's ``Accountant``; each trajectory carries its own split in ``timing``.
"""

from __future__ import annotations

import ctypes
import functools
import queue
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from termrl.distributed import current
from termrl.env import EnvConfig, TerminalEnv
from termrl.episode import Verifier
from termrl.protocols import Ending, Judge, Outcome, Policy, Reply, Task, Trajectory, Turn
from termrl.reward.spec import RewardSpec, as_spec
from termrl.rollout.accounting import Accountant


@dataclass
class RolloutConfig:
    """How a set of episodes is run."""

    samples: int = 1
    """Episodes per task (pass@k needs k or more)."""
    workers: int = 2
    """Episodes alive at once, each with its own sandbox."""
    max_batch: int | None = None
    """Most turns per policy call; default ``workers``."""
    batch_window_s: float = 0.02
    """How long the batcher waits for more turns once one is ready."""
    spec: RewardSpec | str = "staged"
    """The ``RewardSpec`` scoring each episode; a preset name or TOML path is loaded here, once."""
    progress: float = 1.0
    """Training progress the spec's schedules are evaluated at (1.0: the end, for evaluation)."""
    env: EnvConfig = field(default_factory=EnvConfig)
    verifier: Verifier | None = None
    """How each episode is verified (``termrl.episode.Verifier``): None, in its own sandbox;
    ``PoolVerifier(RayVerifierPool(...))`` on a Ray cluster's warm verifiers."""
    judge: Judge | None = None
    """A ``Judge`` reading each passing episode (the ``judge`` stage and reward component), or None."""

    def __post_init__(self):
        self.spec = as_spec(self.spec)


def episode_id(task: Task, sample: int) -> str:
    """Unique in a run, stable across resumes."""
    return f"{task.id}#{task.meta.seed if task.meta.seed is not None else ''}#{sample}"


class Batcher:
    """Collects turns from episode threads and answers them with one policy call per batch; a
    policy that batches by itself as turns come (``continuous``: a server with continuous
    batching) gets each turn at once, up to ``max_batch`` in flight, none waiting for another."""

    def __init__(self, policy: Policy, max_batch: int, window_s: float, accountant: Accountant):
        self.policy, self.max_batch, self.window_s, self.accountant = policy, max_batch, window_s, accountant
        self._each = (ThreadPoolExecutor(max_workers=max_batch, thread_name_prefix="termrl-turn")
                      if getattr(policy, "continuous", False) else None)
        self._queue: queue.Queue[tuple[Turn, Future] | None] = queue.Queue()
        self._active = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="termrl-batcher", daemon=True)
        self._thread.start()

    def enter(self) -> None:
        with self._lock:
            self._active += 1

    def leave(self) -> None:
        with self._lock:
            self._active -= 1

    def __call__(self, turn: Turn) -> Reply:
        future: Future = Future()
        self._queue.put((turn, future))
        return future.result()

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)
        if self._each is not None:
            self._each.shutdown(wait=False)

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._each is not None:
                self._each.submit(self._settle, [item])
                continue
            batch = [item]
            deadline = time.monotonic() + self.window_s
            while len(batch) < self.max_batch:
                with self._lock:
                    if len(batch) >= self._active:
                        break  # every live episode is waiting: no reason to wait longer
                try:
                    more = self._queue.get(timeout=max(deadline - time.monotonic(), 0))
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)
                    break
                batch.append(more)
            self._settle(batch)

    def _settle(self, batch: list[tuple[Turn, Future]]) -> None:
        try:
            self._answer(batch)
        except Exception as e:  # noqa: BLE001 - never leave an episode waiting for a reply
            for _, future in batch:
                if not future.done():
                    future.set_exception(e)

    def _answer(self, batch: list[tuple[Turn, Future]]) -> None:
        started = time.perf_counter()
        try:
            with self.accountant.phase("generation"):
                replies = self.policy.generate([turn for turn, _ in batch])
            if len(replies) != len(batch):
                raise RuntimeError(f"policy {self.policy.name} returned {len(replies)} replies for "
                                   f"{len(batch)} turns")
        except Exception as e:  # noqa: BLE001 - handed to the waiting episode, which records it
            if len(batch) > 1:
                # one turn's failure (an endpoint's 500 for that request) must not fail the
                # episodes batched with it: each is asked alone, and only the failing ones fail
                for item in batch:
                    self._answer([item])
                return
            batch[0][1].set_exception(e)
            return
        elapsed = time.perf_counter() - started
        for (turn, future), reply in zip(batch, replies):
            if not reply.gen_s:
                reply.gen_s = elapsed / len(batch)
            self.accountant.add_episode(_turn_id(turn), "generation", reply.gen_s)
            future.set_result(reply)


def _turn_id(turn: Turn) -> str:
    return episode_id(turn.task, turn.sample)


def run_episode(task: Task, sample: int, policy_name: str, ask: Callable[[Turn], Reply],
                config: RolloutConfig, spec: RewardSpec | None, accountant: Accountant) -> Trajectory:
    """One episode, never raising: a harness failure is recorded in the trajectory. ``spec``: what
    scores it (``config.spec``, as a rule; None: 1.0 / 0.0 for passed / failed)."""
    eid = episode_id(task, sample)
    traj = Trajectory(episode_id=eid, task_id=task.id, policy=policy_name, seed=task.meta.seed,
                      split=task.meta.split, sample=sample, family=task.meta.family or None, started=time.time())
    env = TerminalEnv(config.env, spec=spec, progress=config.progress,
                      phase=lambda name: accountant.phase(name, eid), verifier=config.verifier, judge=config.judge)
    try:
        env.reset(task)
        traj.prompt = [dict(m) for m in env.messages]
        while True:
            reply = ask(Turn(list(env.messages), task, len(env.steps), sample, tools=config.env.tools))
            _, reward, terminated, truncated, info = env.step(reply)
            if terminated or truncated:
                break
        outcome: Outcome = info["outcome"]
        traj.ending = outcome.ending.value
        traj.passed = bool(outcome.evidence.passed)
        traj.reward = reward
        traj.components = outcome.reward.component_dicts() if outcome.reward is not None else {}
        traj.evidence = outcome.evidence.to_dict()
        traj.findings = [asdict(f) for f in outcome.findings]
        if outcome.ending is Ending.ERROR:
            traj.error = outcome.error
        elif not outcome.verified:
            traj.error = f"verification failed: {outcome.error}"
    except Exception as e:  # noqa: BLE001 - the run goes on; the failure is in the record
        traj.ending, traj.error = Ending.ERROR.value, f"{type(e).__name__}: {e}"
    finally:
        env.close()
    traj.steps = env.steps
    traj.timing = accountant.episode_timing(eid, pop=True)
    return traj


@dataclass
class EpisodeSink:
    """Where each finished episode goes, in the order given: the run's store (at once), the list
    a run returns (``keep``), and ``on_episode``. Not thread-safe: callers hold their own lock."""

    store: object | None
    keep: bool
    on_episode: Callable[[Trajectory], None] | None
    results: list[Trajectory] = field(default_factory=list)

    def __call__(self, traj: Trajectory) -> None:
        if self.store is not None:
            self.store.write([traj])
        if self.keep:
            self.results.append(traj)
        if self.on_episode:
            self.on_episode(traj)


TRIM_EVERY = 32
"""Episodes between two returns of the C heap's free memory to the system (``release_free_heap``)."""


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim  # glibc; musl and macOS have none
    except (OSError, AttributeError):
        return None


M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter: allocations from this size up get their own mapping."""

LARGE_BUFFER = 128 * 1024
"""From this size an allocation is mapped apart and unmapped when freed (``keep_large_buffers_off_the_heap``)."""


@functools.cache
def keep_large_buffers_off_the_heap() -> bool:
    """Fix glibc's mmap threshold at ``LARGE_BUFFER`` for this process; False where the C library
    has no ``mallopt``. Once per process.

    By default glibc raises the threshold to the size of each large block freed (up to 32 MB),
    so after the first megabyte of command output every later one is carved from the heap,
    between small objects that outlive it: the holes stay, and ``malloc_trim`` cannot give back
    a hole smaller than its neighbours allow. With the threshold fixed, an episode's large
    buffers are mapped and unmapped whole. ``bench/soak.py``, 1,000 measured episodes, 2
    workers: heap free bytes 14.7 -> 37.7 MB and RSS +12% before; 5.6 -> 12.7 MB and RSS
    +7.3% after. Decoding with Qwen2.5-Coder-0.5B (float32, batch 4) ran at the same speed
    with and without it (1.87 and 1.85 tokens/s on a loaded machine)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, LARGE_BUFFER))


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]


def c_heap() -> dict[str, int]:
    """glibc's heaps, all arenas: ``{"in_use": bytes, "free": bytes}`` (free: kept for reuse, not
    given back); {} without glibc 2.33's ``mallinfo2``."""
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return {}
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return {"in_use": info.uordblks, "free": info.fordblks}


def release_free_heap() -> bool:
    """Give the C heap's free memory back to the system (glibc's ``malloc_trim``); False where
    the C library has none.

    An episode makes large short-lived buffers (megabytes of command output, a megabyte reply,
    the parsed test files): freed, glibc keeps the memory in its heaps for later. Over a run
    of thousands of episodes the harness then grew by what glibc kept, not by what Python
    held: in ``bench/soak.py`` (800 episodes) Python's blocks and the heap's bytes in use were
    flat (+0.6 MB) while the heap's free bytes rose from 15 MB to 43 MB, and RSS by 13%."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def run_rollouts(tasks: Sequence[Task], policy: Policy, config: RolloutConfig | None = None, *,
                 store=None, accountant: Accountant | None = None,
                 on_episode: Callable[[Trajectory], None] | None = None, keep: bool = True) -> list[Trajectory]:
    """Every (task, sample) episode not already in ``store``; returns the new trajectories.
    ``keep=False``: they go to ``store`` and ``on_episode`` only and the list returned is empty,
    so a long run holds none of them in memory."""
    config = config or RolloutConfig()
    done = store.done_ids() if store is not None else set()
    todo = [(t, s) for t in tasks for s in range(config.samples) if episode_id(t, s) not in done]
    return play(todo, policy, config, EpisodeSink(store, keep, on_episode), accountant)


def play(items: Sequence[tuple[Task, int]], policy: Policy, config: RolloutConfig, sink: EpisodeSink,
         accountant: Accountant | None = None) -> list[Trajectory]:
    """The (task, sample) episodes of ``items``, ``config.workers`` at once, each finished one handed
    to ``sink`` (under a lock); returns ``sink.results``."""
    keep_large_buffers_off_the_heap()
    accountant = accountant or Accountant()
    batcher = Batcher(policy, config.max_batch or config.workers, config.batch_window_s, accountant)
    lock = threading.Lock()
    finished = [0]

    def one(item: tuple[Task, int]) -> None:
        task, sample = item
        batcher.enter()
        try:
            traj = run_episode(task, sample, policy.name, batcher, config, config.spec, accountant)
        finally:
            batcher.leave()
        with lock:
            sink(traj)
            finished[0] += 1
            if finished[0] % TRIM_EVERY == 0:
                release_free_heap()

    try:
        with ThreadPoolExecutor(max_workers=max(config.workers, 1), thread_name_prefix="termrl-episode") as pool:
            for future in [pool.submit(one, item) for item in items]:
                future.result()
    finally:
        batcher.close()
        release_free_heap()
    return sink.results


def play_stored(tasks: Sequence[Task], policy: Policy, config: RolloutConfig, directory, *,
                accountant: Accountant | None = None, label: str | None = None,
                about: str | None = None, world=None) -> list[Trajectory]:
    """``run_rollouts`` into the ``TrajectoryStore`` at ``directory`` (a resumed run plays only the
    episodes it lacks); returns every stored trajectory. ``label``: report progress on stderr, as
    ``termrl LABEL: 40/200 episodes, 12 of this session's passed``, every 10 episodes and at the end,
    after a line saying how many are left to play and ``about`` them (default: the policy's name).

    ``world`` (``termrl.distributed.World``, default the current one): with more than one process,
    every rank calls this with the same arguments; the missing episodes are split between the ranks
    (each played once) in rounds of ``config.workers`` episodes per rank, and after each round
    rank 0 stores every rank's episodes. A kill loses at most the round in flight."""
    from termrl.rollout.store import TrajectoryStore  # heavy: pyarrow and numpy, for runs that store

    world = world or current()
    store = TrajectoryStore(directory) if world.main else None
    done_ids = world.from_main(lambda: store.done_ids())
    total = len(tasks) * config.samples
    done = [len(done_ids), 0]

    def progress(traj: Trajectory) -> None:
        done[0], done[1] = done[0] + 1, done[1] + bool(traj.passed)
        if label and (done[0] % 10 == 0 or done[0] == total):
            print(f"termrl {label}: {done[0]}/{total} episodes, {done[1]} of this session's passed",
                  file=sys.stderr, flush=True)

    todo = [(t, s) for t in tasks for s in range(config.samples) if episode_id(t, s) not in done_ids]
    if todo and label and world.main:
        print(f"termrl {label}: {total - done[0]} of {total} episodes to play ({about or policy.name})"
              + (f", split between {world.size} processes" if world.size > 1 else ""), file=sys.stderr, flush=True)
    if world.size == 1:
        play(todo, policy, config, EpisodeSink(store, False, progress), accountant)
    else:
        per_round = max(config.workers, 1) * world.size
        for start in range(0, len(todo), per_round):
            mine = play(world.share(todo[start:start + per_round]), policy, config, EpisodeSink(None, True, None),
                        accountant)
            for trajectories in world.gather(mine):
                if world.main and trajectories:
                    store.write(trajectories)
                    for traj in trajectories:
                        progress(traj)
    return world.from_main(lambda: store.read())
