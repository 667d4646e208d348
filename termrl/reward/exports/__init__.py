"""Reward specs as the reward functions of other trainers.

- ``termrl.reward.exports.trl``: ``trl_reward_funcs(spec, evaluate)``, one TRL
  ``GRPOTrainer`` reward function per spec component, and
  ``code_task_evaluator(tasks)``, an ``evaluate`` for code-generation tasks.
- ``termrl.reward.exports.verl``: ``compute_score``, a veRL custom reward
  function (``custom_reward_function.path=.../verl.py``, ``name=compute_score``).

Neither module imports TRL or veRL: they only follow their calling conventions.
"""

from termrl.reward.exports.codegen import code_task_evaluator, extract_code
from termrl.reward.exports.trl import trl_reward_funcs

__all__ = ["code_task_evaluator", "extract_code", "trl_reward_funcs"]
