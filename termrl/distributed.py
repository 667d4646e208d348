"""The processes of one run: a single process, or N started by ``accelerate launch`` / ``torchrun``.

``termrl train`` runs unchanged under a launcher (``accelerate launch --multi_gpu --num_processes N
-m termrl train CONFIG``; on a CPU-only machine the same command gives N gloo processes). Each
process is a rank; rank 0 is the main one. What each does:

- **Training** is TRL's: DDP (or the FSDP/DeepSpeed config given to ``accelerate launch``) keeps
  the ranks' parameters equal; each rank generates and scores its own slice of every GRPO batch.
- **Episodes** (RFT's samples, the held-out and transfer evaluations, DPO's samples) are split
  between ranks, ``World.share``: each episode is played by exactly one rank.
- **Files** are written by rank 0 only: the trajectory stores (the other ranks' episodes reach it
  through ``World.gather``), checkpoints, the final model, config.json, results.json.

``World`` is what the rest of termrl sees of this: ``rank``, ``size``, ``main``, ``gather``
(every rank gets every rank's object, in rank order), ``barrier`` and ``from_main``. With one
process they cost nothing and ``gather(x)`` is ``[x]``.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

TIMEOUT = datetime.timedelta(hours=6)
"""How long a rank waits for the others at a collective (a gather, a barrier) before failing.
Longer than torch's 30 minutes: rank 0 alone prunes, trims and saves while the others wait."""


@dataclass(frozen=True)
class World:
    """This process's place among the run's processes (``rank`` of ``size``)."""

    rank: int = 0
    size: int = 1

    @property
    def main(self) -> bool:
        """Whether this is rank 0, the one that writes files."""
        return self.rank == 0

    def gather(self, obj: T) -> list[T]:
        """Every rank's ``obj`` (picklable), in rank order, on every rank. A collective: every
        rank must call it, in the same order.

        >>> World().gather({"episodes": 3})
        [{'episodes': 3}]
        """
        if self.size == 1:
            return [obj]
        import torch.distributed as dist  # heavy: torch

        out: list = [None] * self.size
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        """Wait until every rank is here."""
        if self.size > 1:
            import torch.distributed as dist  # heavy: torch

            dist.barrier()

    def from_main(self, make: Callable[[], T]) -> T:
        """``make()`` run on rank 0 only (it may write files); every rank gets its result, or
        raises the exception it raised.

        >>> World().from_main(lambda: 42)
        42
        """
        if self.size == 1:
            return make()
        result, error = None, None
        if self.main:
            try:
                result = make()
            except Exception as e:  # noqa: BLE001 - raised again on every rank below
                error = e
        result, error = self.gather((result, error))[0]
        if error is not None:
            raise error
        return result

    def share(self, items: Sequence[T]) -> list[T]:
        """This rank's share of ``items`` (the same sequence on every rank): every ``size``-th
        item from ``rank``, so each item goes to exactly one rank.

        >>> World(1, 2).share("abcde")
        ['b', 'd']
        """
        return list(items[self.rank::self.size])


SINGLE = World()


def current() -> World:
    """The world of this process: its torch.distributed group once one is initialized, else one process."""
    if "torch" not in sys.modules:  # nothing started one
        return SINGLE
    import torch.distributed as dist  # heavy: torch

    if dist.is_available() and dist.is_initialized():
        return World(dist.get_rank(), dist.get_world_size())
    return SINGLE


def join(**options: Any) -> World:
    """Join the process group of the launcher that started this process (``WORLD_SIZE`` > 1, set by
    ``accelerate launch`` and ``torchrun``) through accelerate's ``PartialState`` (gloo on a CPU,
    NCCL on GPUs: the state the trainers then share); one process otherwise."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return current()
    import torch  # heavy: torch
    from accelerate import PartialState  # heavy: accelerate

    PartialState(cpu=not torch.cuda.is_available(), timeout=TIMEOUT, **options)
    world = current()
    if world.size <= 1:
        raise RuntimeError(f"WORLD_SIZE={os.environ['WORLD_SIZE']} but no process group could be joined: "
                           "start termrl with accelerate launch or torchrun, or unset WORLD_SIZE")
    return world


def leave() -> None:
    """Leave the process group, once every rank is here: the last step of a run under a launcher.

    A rank that exits with its group still open can abort at exit ("terminate called without an
    active exception": gloo's threads outlive the interpreter) while rank 0 still writes the
    results; the launcher then fails the whole run. Nothing to do with one process."""
    world = current()
    if world.size <= 1:
        return
    import torch.distributed as dist  # heavy: torch

    world.barrier()
    dist.destroy_process_group()


def end(code: int = 0) -> None:
    """End a rank of a run under a launcher at once, its output flushed; nothing with one process.

    ``leave`` is not enough: after a GRPO run, gloo's threads (``pt_gloo_runloop``,
    ``gloo_tcp_loop``) are still alive once the group is destroyed (seen at exit on both ranks,
    2026-12-05, with no model or DDP object left; a group only joined and destroyed leaves none),
    so the interpreter's teardown can still abort ("terminate called without an active
    exception", exit -6), and the launcher then fails the whole run although every file was
    written. ``os._exit`` skips that teardown. What it skips is safe to skip here: rank 0 has
    written its files and the trainers have closed theirs."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:  # the group is gone by now: the launcher's word
        return

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed stream: nothing left to flush
            pass
    os._exit(code)


def parameters_digest(model, trainable_only: bool = False, max_elements: int | None = None) -> str:
    """SHA-256 of ``model``'s parameters (names and bytes, in name order; only those that train
    with ``trainable_only``): two models with one digest hold bit-identical weights. With
    ``max_elements``, a larger model is sampled: every k-th element of each parameter, k chosen so
    that about that many are read (cheap enough for every step of a large training; two trainings
    that went apart differ almost everywhere, so the sample tells them apart too)."""
    import torch  # heavy: torch

    chosen = [(name, p) for name, p in sorted(model.named_parameters()) if p.requires_grad or not trainable_only]
    total = sum(p.numel() for _, p in chosen)
    stride = math.ceil(total / max_elements) if max_elements and total > max_elements else 1
    digest = hashlib.sha256()
    for name, parameter in chosen:
        digest.update(name.encode())
        values = parameter.detach().reshape(-1)[::stride].contiguous()
        digest.update(values.view(torch.uint8).cpu().numpy().tobytes())
    return digest.hexdigest()


def processes(model, world, trainer=None) -> dict:
    """What results.json says of the run's processes: ``processes`` (how many), and under a
    launcher ``parameter_digests`` (each rank's SHA-256 of its trainable parameters after training)
    and ``parameters_agree`` (whether they are equal, as data parallelism must keep them; None
    under FSDP or DeepSpeed, whose ranks hold different shards)."""
    if world.size == 1:
        return {"processes": 1}
    sharded = trainer is not None and (getattr(trainer, "is_fsdp_enabled", False)
                                       or getattr(trainer, "is_deepspeed_enabled", False))
    digests = world.gather(parameters_digest(model, trainable_only=True))
    return {"processes": world.size, "parameter_digests": digests,
            "parameters_agree": None if sharded else len(set(digests)) == 1}


__all__ = ["SINGLE", "TIMEOUT", "World", "current", "end", "join", "leave", "parameters_digest", "processes"]
