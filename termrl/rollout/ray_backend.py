"""termrl on a Ray cluster (optional extra: ``pip install 'termrl[ray]'``): rollouts, audits
and verification.

    termrl eval --policy openai:http://vllm:8000/v1 --suite builtin --ray HEAD:6379 --out runs/e1
    termrl audit builtin --ray HEAD:6379 --out runs/a1

What runs where:

- **Driver** (the calling process): works out the episodes (or audited tasks) not yet done,
  submits one Ray task each with at most ``workers`` in flight, and writes each result to
  the run's store or journal as it arrives, so ``--resume`` works as it does locally and
  nothing is ever written twice. The reward spec was loaded with the ``RolloutConfig``, on
  the driver: a TOML spec need not exist on the workers.
- **Worker** (one Ray task per episode, ``num_cpus`` each): builds the policy, opens the
  episode's sandbox, plays, verifies and scores it (``run_episode``) and returns the
  ``Trajectory``. An audit's Ray task is one audited task: its baseline, do-nothing and
  exploit episodes, sharing that task's set-up and verification caches
  (``termrl.checks.audit.audit_by_spec``). Every worker node needs termrl installed and
  bubblewrap on ``PATH``, run as root or with user namespaces.
- **Verifier actors** (``RayVerifierPool``): warm verifiers (``VerifierPool``) as Ray
  actors; GRPO's and RFT's episodes hand their finished files to them, so verification
  scales with the cluster's nodes, not with the trainer's CPU.
- **Policy**: a spec string is built anew in every task; a policy object is sent once
  (``ray.put``). Use an endpoint (``openai:``) or a scripted policy: a local ``hf:`` model
  would be loaded once per episode on every worker at once, so the CLI refuses it; serve
  the model with vLLM and point ``openai:`` at it. Turns are sent one at a time per episode;
  the server batches the concurrent episodes itself.

Failures: a failing sandbox, policy call or verifier is recorded by ``run_episode`` as
locally. A Ray task lost with its worker or node is run again (``max_retries`` times, by
Ray, on a live node); after that, or when the task itself raised, the driver records it
(``ending = "error"``, or audit rows with the error) and the run goes on. A retried
episode was never stored (only the driver writes), so it is neither lost nor duplicated.
Each trajectory's ``timing`` holds its own phase split, measured on its worker.
"""

from __future__ import annotations

import queue
import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Self

from termrl.policies import make_policy
from termrl.protocols import Ending, Evidence, Policy, Reply, Task, Trajectory, Turn
from termrl.rollout.accounting import Accountant
from termrl.rollout.runner import EpisodeSink, RolloutConfig, episode_id, run_episode
from termrl.verify import unverified
from termrl.verify.pool import VerifierPool

INSTALL_HINT = "the Ray backend needs `pip install 'termrl[ray]'`"

MAX_RETRIES = 2
"""Times a Ray task lost with its worker or node is run again before it is recorded as an error."""


def _import_ray():
    try:
        import ray  # optional: ray (termrl[ray])
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
    return ray


def connect(address: str | None = None):
    """Ray, initialised: join the cluster at ``address`` (``HOST:PORT``, or ``auto`` for the
    one ``ray start`` runs on this machine); None or ``local``: ``RAY_ADDRESS`` when set,
    otherwise a new single-node instance in this process. Already initialised: as it is."""
    ray = _import_ray()
    if ray.is_initialized():
        return ray
    if address in (None, "", "local"):
        ray.init(include_dashboard=False, log_to_driver=False)
    else:
        why = _unreachable(address)
        if why:  # Ray itself retries for minutes before it gives up
            raise ConnectionError(f"no Ray cluster at {address!r} (nothing answers there: {why}); start one "
                                  "with `ray start --head`, or pass its head's HOST:PORT")
        try:
            ray.init(address=address, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise ConnectionError(f"no Ray cluster at {address!r} ({e}); start one with `ray start --head`, "
                                  "or pass its head's HOST:PORT") from None
    return ray


def _unreachable(address: str, timeout: float = 5.0) -> str | None:
    """Why nothing accepts a connection at ``address`` (``HOST:PORT``); None when something does,
    or when the address is not ``HOST:PORT`` (``auto``, ``ray://...``: Ray resolves those)."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or "://" in host or not port.isdigit():
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        return str(e) or type(e).__name__
    return None


def _play(task: Task, sample: int, policy, options: dict, config: RolloutConfig) -> Trajectory:
    """One episode, on a Ray worker; generation is timed as in the local runner's batcher."""
    # a policy object was sent with ray.put: Ray hands the task the object itself
    policy = make_policy(policy, **options) if isinstance(policy, str) else policy
    accountant, eid = Accountant(), episode_id(task, sample)

    def ask(turn: Turn) -> Reply:
        started = time.perf_counter()
        with accountant.phase("generation", eid):
            reply = policy.generate([turn])[0]
        reply.gen_s = reply.gen_s or time.perf_counter() - started
        return reply

    return run_episode(task, sample, policy.name, ask, config, config.spec, accountant)


def failure_message(error: BaseException) -> str:
    """What a Ray task's failure says: the error the task raised, or how Ray lost it."""
    cause = getattr(error, "cause", None)  # RayTaskError wraps what the task raised
    if isinstance(cause, BaseException):
        return f"remote task failed: {type(cause).__name__}: {cause}"
    return f"remote task failed: {type(error).__name__}: {error}"


def _failed(task: Task, sample: int, policy_name: str, error: BaseException) -> Trajectory:
    """The record of an episode whose Ray task failed as a whole."""
    return Trajectory(episode_id=episode_id(task, sample), task_id=task.id, policy=policy_name,
                      seed=task.meta.seed, split=task.meta.split, sample=sample,
                      family=task.meta.family or None, ending=Ending.ERROR.value, error=failure_message(error),
                      started=time.time())


def stream_jobs(ray, jobs: Iterable, submit: Callable, workers: int,
            done: Callable[[object, object, BaseException | None], None]) -> None:
    """Run ``submit(job)`` for each job with at most ``workers`` in flight; ``done(job, result,
    error)`` in the driver as each finishes. The driver stopping early cancels what is in flight."""
    todo, inflight = iter(jobs), {}
    try:
        while True:
            while len(inflight) < workers and (job := next(todo, None)) is not None:
                inflight[submit(job)] = job
            if not inflight:
                return
            ready, _ = ray.wait(list(inflight), num_returns=1)
            for ref in ready:
                job = inflight.pop(ref)
                try:
                    result, error = ray.get(ref), None
                except Exception as e:  # noqa: BLE001 - RayTaskError, a lost worker or node: recorded, the run goes on
                    result, error = None, e
                done(job, result, error)
    finally:
        for ref in inflight:
            ray.cancel(ref)


def run_rollouts_ray(tasks: Sequence[Task], policy: str | Policy, config: RolloutConfig | None = None, *,
                     store=None, address: str | None = None,
                     on_episode: Callable[[Trajectory], None] | None = None,
                     num_cpus: float = 1, max_retries: int = MAX_RETRIES, keep: bool = True,
                     **policy_options) -> list[Trajectory]:
    """Every (task, sample) episode not already in ``store``, each a Ray task; returns the new
    trajectories (none with ``keep=False``: they go to ``store`` and ``on_episode`` only).

    ``policy``: a spec string for ``make_policy`` on the worker (with ``policy_options``), or a
    policy object, sent once. ``address``: see ``connect``. ``config.workers``: episodes in
    flight at once. ``num_cpus``: reserved per episode. ``max_retries``: runs again of an
    episode whose worker or node died.
    """
    ray = connect(address)
    config = config or RolloutConfig()
    if config.workers < 1:
        raise ValueError(f"workers must be at least 1, got {config.workers}")
    name = policy if isinstance(policy, str) else policy.name
    shipped = policy if isinstance(policy, str) else ray.put(policy)
    done = store.done_ids() if store is not None else set()
    todo = [(t, s) for t in tasks for s in range(config.samples) if episode_id(t, s) not in done]
    remote = ray.remote(_play).options(num_cpus=num_cpus, max_retries=max_retries, retry_exceptions=False)
    sink = EpisodeSink(store, keep, on_episode)

    def finished(job, traj, error) -> None:
        sink(_failed(*job, name, error) if error is not None else traj)

    stream_jobs(ray, todo, lambda job: remote.remote(*job, shipped, policy_options, config), config.workers,
            finished)
    return sink.results


def cluster_cpus(ray) -> int:
    """The CPUs the cluster has, at least 1: Ray tasks kept in flight when the caller gives no number."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


class _VerifierActor:
    """A warm ``VerifierPool`` on a Ray worker (the body of ``RayVerifierPool``'s actors)."""

    def __init__(self, workers: int, static: bool, memory_mb: int):
        self.pool = VerifierPool(workers=workers, static=static, memory_mb=memory_mb)

    def verify(self, task: Task, files: Mapping[str, bytes], trace: list[dict] | None,
               modes: Mapping[str, int] | None, folders: Mapping[str, int] | None = None) -> Evidence:
        return self.pool.verify_files(task, files, trace=trace, modes=modes, folders=folders)

    def close(self) -> None:
        self.pool.close()


class RayVerifierPool:
    """``VerifierPool``'s ``verify_files`` on ``actors`` Ray actors, each a warm verifier of
    ``workers`` sandboxes; thread-safe (each call waits for a free slot). An actor whose
    worker or node dies is restarted by Ray and the call run again (``max_retries``); past
    that the evidence is unverified (reward None), as any harness failure, never an error
    raised into training. Use it as ``termrl.episode.PoolVerifier(RayVerifierPool(...))``."""

    def __init__(self, actors: int = 2, workers: int = 1, *, address: str | None = None, static: bool = True,
                 memory_mb: int = 2048, num_cpus: float = 1, max_retries: int = MAX_RETRIES):
        if actors < 1 or workers < 1:
            raise ValueError(f"a verifier pool needs at least one actor and one worker each, got {actors} and {workers}")
        self._ray = ray = connect(address)
        cls = ray.remote(_VerifierActor).options(num_cpus=num_cpus, max_concurrency=workers,
                                                  max_restarts=max_retries, max_task_retries=max_retries)
        self._actors = [cls.remote(workers, static, memory_mb) for _ in range(actors)]
        self._free: queue.Queue = queue.Queue()
        for actor in self._actors:
            for _ in range(workers):
                self._free.put(actor)
        self.workers = actors * workers
        """Verifications run at once."""
        self.verifications = 0
        """Verifications asked of the actors so far."""
        self.failures = 0
        """Of them, those lost with their actor past its retries (unverified evidence)."""

    workdir = "/workspace"
    """The workdir the actors' sandboxes verify in (``fits_fast_path``)."""

    def verify_files(self, task: Task, files: Mapping[str, bytes], trace: list[dict] | None = None,
                     modes: Mapping[str, int] | None = None, folders: Mapping[str, int] | None = None) -> Evidence:
        """``VerifierPool.verify_files`` on a free actor."""
        actor = self._free.get()
        try:
            self.verifications += 1
            return self._ray.get(actor.verify.remote(task, dict(files), trace, dict(modes or {}), dict(folders or {})))
        except Exception as e:  # noqa: BLE001 - a harness failure: unverified, the reward is None
            self.failures += 1
            return unverified(task.id, RuntimeError(failure_message(e)))
        finally:
            self._free.put(actor)

    def map(self, jobs: Iterable[tuple[Task, Mapping[str, bytes]]]) -> list[Evidence]:
        """Verify many (task, files) pairs on the actors at once, in order."""
        with ThreadPoolExecutor(max_workers=self.workers) as ex:
            return list(ex.map(lambda job: self.verify_files(*job), jobs))

    def close(self) -> None:
        for actor in self._actors:
            try:
                self._ray.get(actor.close.remote(), timeout=60)
            except Exception:  # noqa: BLE001, S110 - a dead actor holds no sandbox to close
                pass
            self._ray.kill(actor)
        self._actors.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
