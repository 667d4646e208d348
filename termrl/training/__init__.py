"""Training built on TRL: ``grpo`` (online, in termrl environments), ``ahead`` (TRL's GRPO trainer
that starts each completion's reward while the batch still generates), ``rft`` (rejection-sampling
fine-tuning on trajectories) and ``dpo`` (pairs ranked by execution)."""
