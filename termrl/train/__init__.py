"""Training built on TRL: ``grpo`` (online, in termrl environments), ``rft`` (rejection-sampling
fine-tuning on trajectories) and ``dpo`` (pairs ranked by execution)."""
