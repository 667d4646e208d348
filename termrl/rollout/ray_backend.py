"""Run the episodes of ``run_rollouts`` on a Ray cluster (optional extra: ``pip install 'termrl[ray]'``).

What runs where:

- **Driver** (the calling process): works out the episodes not yet in the store, submits
  one Ray task per episode with at most ``config.workers`` in flight (the next is
  submitted when one finishes), and writes each trajectory to the store as it arrives.
  The reward spec is loaded here, so a TOML spec need not exist on the workers.
- **Worker** (one Ray task per episode, ``num_cpus`` each): builds the policy from its
  spec string, opens the episode's sandbox, plays, verifies and scores it
  (``run_episode``), and returns the ``Trajectory``. Every worker node therefore needs
  termrl installed and bubblewrap on ``PATH``, run as root or with user namespaces.
- **Policy**: built anew in every task, so use an endpoint policy (``openai:``) or a
  scripted one. A local ``hf:`` model would be loaded once per episode, on every worker
  at once: on a cluster, serve the model with vLLM and point ``openai:`` at it. Turns
  are sent one at a time per episode (the local runner's batcher does not span
  processes); the server batches the concurrent episodes itself.

Failures follow ``run_rollouts``: a failing sandbox, policy call or verifier is recorded
by ``run_episode``; a task that fails as a whole (the policy cannot be built, the worker
died, after Ray's own retries of a lost worker) is recorded by the driver as a trajectory
with ``ending = "error"`` and the error.
The run goes on either way. Each trajectory's ``timing`` holds its own phase split,
measured on its worker.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from termrl.policies import make_policy
from termrl.protocols import Ending, Reply, Task, Trajectory, Turn
from termrl.rollout.accounting import Accountant
from termrl.rollout.runner import RolloutConfig, episode_id, run_episode

INSTALL_HINT = "the Ray backend needs `pip install 'termrl[ray]'`"


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
    return ray


def _play(task: Task, sample: int, policy_spec: str, options: dict, config: RolloutConfig, spec) -> Trajectory:
    """One episode, on a Ray worker; generation is timed as in the local runner's batcher."""
    policy, accountant, eid = make_policy(policy_spec, **options), Accountant(), episode_id(task, sample)

    def ask(turn: Turn) -> Reply:
        started = time.perf_counter()
        with accountant.phase("generation", eid):
            reply = policy.generate([turn])[0]
        reply.gen_s = reply.gen_s or time.perf_counter() - started
        return reply

    return run_episode(task, sample, policy.name, ask, config, spec, accountant)


def _failed(task: Task, sample: int, policy_spec: str, error: BaseException) -> Trajectory:
    """The record of an episode whose Ray task failed as a whole."""
    cause = getattr(error, "cause", None)  # RayTaskError wraps what the task raised
    if isinstance(cause, BaseException):
        message = f"remote task failed: {type(cause).__name__}: {cause}"
    else:
        message = f"remote task failed: {type(error).__name__}: {error}"
    return Trajectory(episode_id=episode_id(task, sample), task_id=task.id, policy=policy_spec,
                      seed=task.meta.seed, split=task.meta.split, sample=sample,
                      family=task.meta.family or None, ending=Ending.ERROR.value, error=message,
                      started=time.time())


def run_rollouts_ray(tasks: Sequence[Task], policy_spec: str, config: RolloutConfig | None = None, *,
                     store=None, address: str | None = None,
                     on_episode: Callable[[Trajectory], None] | None = None,
                     num_cpus: float = 1, **policy_options) -> list[Trajectory]:
    """Every (task, sample) episode not already in ``store``, each a Ray task; returns the new trajectories.

    ``policy_spec`` and ``policy_options`` are handed to ``make_policy`` on the worker.
    ``address`` is passed to ``ray.init`` when Ray is not initialised yet (None: start or
    join a local instance, or ``RAY_ADDRESS``). ``num_cpus`` is reserved per episode.
    """
    from termrl.reward.spec import load_spec

    ray = _import_ray()
    config = config or RolloutConfig()
    if config.workers < 1:
        raise ValueError(f"workers must be at least 1, got {config.workers}")
    spec = load_spec(config.spec) if isinstance(config.spec, str) else config.spec
    done = store.done_ids() if store is not None else set()
    todo = iter([(t, s) for t in tasks for s in range(config.samples) if episode_id(t, s) not in done])
    if not ray.is_initialized():
        ray.init(address=address)
    remote = ray.remote(_play).options(num_cpus=num_cpus)
    inflight: dict = {}
    results: list[Trajectory] = []
    try:
        while True:
            while len(inflight) < config.workers and (item := next(todo, None)) is not None:
                inflight[remote.remote(*item, policy_spec, policy_options, config, spec)] = item
            if not inflight:
                break
            ready, _ = ray.wait(list(inflight), num_returns=1)
            for ref in ready:
                task, sample = inflight.pop(ref)
                try:
                    traj = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - RayTaskError, worker died: recorded, the run goes on
                    traj = _failed(task, sample, policy_spec, e)
                if store is not None:
                    store.write([traj])
                results.append(traj)
                if on_episode:
                    on_episode(traj)
    finally:
        for ref in inflight:  # the driver stopped early: do not leave episodes running
            ray.cancel(ref)
    return results
