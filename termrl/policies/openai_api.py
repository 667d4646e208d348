"""Any OpenAI-compatible chat completions endpoint as a policy (vLLM, SGLang, llama.cpp, Ollama).

The rollout runner hands over each turn as it comes (``continuous``: the server batches, and no
episode waits for another's reply); the turns of a batch given at once are sent concurrently,
one request each, through the official
``openai`` client, which retries connection errors, timeouts, 408/409/429 and 5xx with
backoff. Structured ``tool_calls`` in a response are rendered into the text as
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` so the environment's one
parser reads both styles. Token ids are not exposed by the chat API: ``Reply.tokens`` is
None; ``Reply.logprobs`` are the server's (over the content tokens) when ``logprobs`` is on.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from termrl.policies.base import PolicyError, configure
from termrl.protocols import Reply, Turn


@dataclass(frozen=True)
class OpenAIConfig:
    """How ``OpenAIPolicy`` talks to its endpoint and samples."""

    temperature: float = 1.0
    """Sampling temperature, sent as is (0 is greedy on vLLM, SGLang, llama.cpp, Ollama)."""
    top_p: float = 1.0
    """Nucleus sampling mass, sent as is."""
    max_tokens: int = 512
    """Longest reply, in tokens."""
    logprobs: bool = False
    """Ask the server for the sampled tokens' log-probs (vLLM: under the raw model by default)."""
    timeout: float = 120.0
    """Seconds per request attempt."""
    max_retries: int = 2
    """Retries after the first attempt, with the client's backoff; then PolicyError."""
    concurrency: int = 8
    """Requests in flight at once for one batch."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key; "EMPTY" when unset (local servers ignore it)."""
    extra_body: dict = field(default_factory=dict)
    """Server-specific request fields, sent as is (vLLM: {"top_k": 20})."""

    def __post_init__(self):
        if self.concurrency < 1 or self.max_tokens < 1 or self.max_retries < 0 or self.timeout <= 0:
            raise ValueError("need concurrency >= 1, max_tokens >= 1, max_retries >= 0, timeout > 0")


class OpenAIPolicy:
    """Sends each turn's messages to ``{base_url}/chat/completions`` as ``model``.

    ``gen_s`` is the batch's wall time divided among its replies (so they sum to wall time);
    ``prompt_tokens`` is the server's ``usage.prompt_tokens``."""

    continuous = True
    """The rollout runner sends each turn as it comes: the server (vLLM, SGLang, llama.cpp) batches."""

    def __init__(self, base_url: str, model: str, config: OpenAIConfig | None = None, **options):
        import openai  # heavy: openai

        self.config = configure(OpenAIConfig, config, options)
        self.base_url, self.model = base_url, model
        self.name = f"openai:{model}@{base_url}"
        self.client = openai.OpenAI(base_url=base_url, api_key=os.environ.get(self.config.api_key_env) or "EMPTY",
                                    timeout=self.config.timeout, max_retries=self.config.max_retries)

    def generate(self, turns: Sequence[Turn]) -> list[Reply]:
        if not turns:
            return []
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=min(self.config.concurrency, len(turns))) as pool:
            replies = list(pool.map(self._one, turns))
        gen_s = (time.perf_counter() - start) / len(turns)
        for r in replies:
            r.gen_s = gen_s
        return replies

    def _one(self, turn: Turn) -> Reply:
        import openai  # heavy: openai

        c = self.config
        optional = {k: v for k, v in (("logprobs", c.logprobs), ("extra_body", c.extra_body),
                                      ("tools", list(turn.tools))) if v}
        try:
            response = self.client.chat.completions.create(
                model=self.model, messages=turn.messages, temperature=c.temperature, top_p=c.top_p,
                max_tokens=c.max_tokens, **optional)
        except (openai.OpenAIError, ValueError) as e:  # ValueError: a body that is not JSON
            raise PolicyError(f"{self.base_url}: {type(e).__name__}: {e}") from e
        if not response.choices:
            raise PolicyError(f"{self.base_url}: response has no choices")
        choice = response.choices[0]
        content = choice.logprobs.content if choice.logprobs and choice.logprobs.content else None
        return Reply(text=render(choice.message), logprobs=[t.logprob for t in content] if content else None,
                     prompt_tokens=response.usage.prompt_tokens if response.usage else None)


def render(message) -> str:
    """The message's text with each tool call appended as ``<tool_call>{json}</tool_call>``.
    Arguments that are not valid JSON are kept as the string the server sent."""
    parts = [message.content] if message.content else []
    for call in message.tool_calls or ():
        try:
            arguments = json.loads(call.function.arguments or "{}")
        except json.JSONDecodeError:
            arguments = call.function.arguments
        parts.append(f"<tool_call>{json.dumps({'name': call.function.name, 'arguments': arguments})}</tool_call>")
    return "\n".join(parts)
