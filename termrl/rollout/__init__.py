"""Rollouts: run a policy on tasks, store each episode as a ``Trajectory``, account for the compute."""
