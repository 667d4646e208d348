"""GRPO with TRL's own GRPOTrainer on termrl tasks served by `termrl serve`.

The episodes (sandboxes, hidden tests, hack detectors) run on the server; the model, the
generation and the rewards run here. Start a server first, then:

    python examples/trl_grpo_remote.py --server http://127.0.0.1:8000 --model PATH --tasks logs-count:0-7

--tasks must name tasks the server serves (its --suite). The token, if the server has one, comes
from TERMRL_SERVE_TOKEN.
"""

import argparse
import os

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from termrl.reward.exports.trl import trl_reward_funcs
from termrl.serve.client import RemoteEnvironmentFactory
from termrl.tasks.suites import resolve
from termrl.training.grpo import task_rows

parser = argparse.ArgumentParser()
parser.add_argument("--server", action="append", required=True, help="a termrl serve url (repeat for several)")
parser.add_argument("--model", required=True, help="a local model directory whose chat template calls tools")
parser.add_argument("--tasks", required=True, help="the suite to train on, e.g. logs-count:0-7")
parser.add_argument("--spec", default="staged", help="reward spec: preset name or TOML file")
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--output-dir", default="grpo-remote")
args = parser.parse_args()

tasks = [entry.task for entry in resolve(args.tasks) if entry.task is not None]
dataset = Dataset.from_list(task_rows(tasks))  # prompt (system + empty user) and task_id per row

config = GRPOConfig(output_dir=args.output_dir, max_steps=args.steps, num_generations=2,
                    per_device_train_batch_size=2, max_completion_length=256,
                    max_tool_calling_iterations=3, learning_rate=1e-5, logging_steps=1,
                    report_to="none", save_strategy="no",
                    use_cpu=not torch.cuda.is_available(), bf16=torch.cuda.is_available())
environments = RemoteEnvironmentFactory(args.server, token=os.environ.get("TERMRL_SERVE_TOKEN"))
trainer = GRPOTrainer(
    model=AutoModelForCausalLM.from_pretrained(args.model),
    processing_class=AutoTokenizer.from_pretrained(args.model),
    # one reward function per component of the spec, scored here from each episode's outcome
    reward_funcs=trl_reward_funcs(args.spec, num_generations=config.num_generations,
                                  max_tool_calling_iterations=config.max_tool_calling_iterations),
    args=config,
    train_dataset=dataset,
    environment_factory=environments,  # each rollout: one episode on a server, its tools bash and write_file
)
try:
    trainer.train()
finally:
    environments.close()
trainer.save_model(args.output_dir)
print(f"trained {trainer.state.global_step} steps; model in {args.output_dir}")
