"""Build a tiny Hugging Face causal LM from config, with nothing downloaded.

``build_tiny_model(dest)`` trains a byte-level BPE tokenizer (``tokenizers``) on a small
built-in corpus of shell, Python, Markdown and ``<tool_call>`` JSON, wraps it as a
``PreTrainedTokenizerFast`` with Qwen's ChatML special tokens and TRL's ``qwen2_5.jinja``
chat template, and saves it next to a randomly initialised, seeded ``Qwen2ForCausalLM``.
The result loads with ``AutoTokenizer`` / ``AutoModelForCausalLM.from_pretrained(dest)``.

The model knows nothing: it is for tests and for the training quickstart, which teaches it
to emit commands from scratch. Its tokens are the same as Qwen's in name (``<|im_end|>``
is eos, ``<|endoftext|>`` pad) so code written against a real Qwen2.5 runs unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from termrl.actions import render_tool_call
from termrl.episode import initial_messages, starts_empty, workspace_listing
from termrl.protocols import Action, ActionKind, Task
from termrl.tasks.families import get_family

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Special tokens: skipped by ``decode(skip_special_tokens=True)``. pad, bos-less, eos."""
TOOL_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
"""Single-token markers, added as non-special tokens (as Qwen2.5 does) so decoded text keeps them."""

CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""Fallback chat template when trl is not installed: plain ChatML, no tools."""

CORPUS = (
    ("ls -la\ncd /workspace && ls\ncat README.md\npwd\ngrep -rn 'def main' .\n"
     "find . -name '*.py' | head\npython -m pytest -q\npytest -x tests/test_app.py\n"
     "sed -n '1,40p' src/app.py\nsed -i 's/foo/bar/g' config.txt\necho $PATH\nexport FOO=1\n"
     "git status\ngit diff\ngit log --oneline | head\nmake && ./main\ngcc -O2 -o main main.c\n"
     "pip install -e .\nmkdir -p build && cd build\nrm -f out.txt\ncp a.txt b.txt\nmv old new\n"
     "wc -l *.py\nhead -n 20 data.csv\ntail -f log.txt\nchmod +x run.sh\n./run.sh --help\n"
     "cat > fix.py << 'EOF'\nprint('ok')\nEOF\nif [ -f x ]; then echo yes; else echo no; fi\n"
     "for f in *.txt; do echo \"$f\"; done\nawk '{print $1}' file | sort | uniq -c\n"),
    ("def add(a, b):\n    return a + b\n\n\ndef main() -> None:\n    args = parse_args()\n"
     "    for item in items:\n        if item is None:\n            continue\n        print(item)\n\n\n"
     "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, x):\n"
     "        self.items.append(x)\n\n    def pop(self):\n        return self.items.pop()\n\n\n"
     "import os\nimport sys\nfrom pathlib import Path\n\nif __name__ == '__main__':\n    main()\n"
     "def test_add():\n    assert add(1, 2) == 3\n\ntry:\n    value = int(text)\nexcept ValueError:\n"
     "    value = 0\nwith open(path) as f:\n    data = f.read()\nreturn {k: v for k, v in pairs}\n"),
    ("# Fix the failing test\n\nThe function `parse` returns the wrong value for empty input.\n"
     "Run the tests with `pytest`, then fix `src/parse.py`.\n\n## Steps\n\n1. Read the code.\n"
     "2. Run the tests.\n3. Edit the file.\n4. Submit.\n\n```bash\npytest -q\n```\n"),
    ('<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la"}}\n</tool_call>\n'
     '<tool_call>\n{"name": "bash", "arguments": {"command": "python -m pytest -q"}}\n</tool_call>\n'
     '<tool_call>{"name": "write_file", "arguments": {"path": "src/app.py", "content": "x = 1\\n"}}'
     "</tool_call>\n"
     '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>\n'
     "<tool_response>\ntotal 8\ndrwxr-xr-x 2 user user 4096 src\n-rw-r--r-- 1 user user 120 README.md\n"
     "</tool_response>\n<tool_response>\n1 failed, 3 passed in 0.12s\nexit code: 1\n</tool_response>\n"),
    ("<|im_start|>system\nYou are a coding agent in a terminal.<|im_end|>\n<|im_start|>user\n"
     "Make the tests pass.<|im_end|>\n<|im_start|>assistant\nI will look at the files first.\n"
     '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call><|im_end|>\n'),
)
"""The built-in tokenizer corpus: a little of what a terminal agent reads and writes."""


def _chat_template() -> str:
    try:
        import trl  # heavy: trl
    except ImportError:
        return CHATML_TEMPLATE
    path = os.path.join(os.path.dirname(trl.__file__), "chat_templates", "qwen2_5.jinja")
    return Path(path).read_text() if os.path.exists(path) else CHATML_TEMPLATE


def build_tokenizer(corpus: Iterable[str] | None = None, vocab_size: int = 2000, *,
                    base_corpus: bool = True, pre_tokenize: str | None = None, extra_tokens: Iterable[str] = ()):
    """A ``PreTrainedTokenizerFast``: byte-level BPE trained on ``CORPUS`` (unless not
    ``base_corpus``) and ``corpus``.

    Byte-level means any text encodes and decodes losslessly. ``vocab_size`` is an upper
    bound: a small corpus yields fewer merges. ``pre_tokenize`` is a regex whose matches are
    isolated before byte-level encoding (merges never cross them) in place of GPT-2's
    split; ``extra_tokens`` are added as single non-special tokens, like ``TOOL_TOKENS``."""
    from tokenizers import (  # heavy: tokenizers
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast  # heavy: transformers

    tok = Tokenizer(models.BPE())
    if pre_tokenize is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pre_tokenize), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([*(CORPUS if base_corpus else ()), *(corpus or ())], trainer=trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in (*TOOL_TOKENS, *extra_tokens)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   additional_special_tokens=["<|im_start|>"])
    fast.chat_template = _chat_template()
    return fast


def build_tiny_model(dest: str | Path, *, hidden_size: int = 64, layers: int = 2, heads: int = 4,
                     corpus: Iterable[str] | None = None, vocab_size: int = 2000, seed: int = 0,
                     max_positions: int = 4096, tokenizer=None) -> Path:
    """Write a tokenizer and a random ``Qwen2ForCausalLM`` (weights seeded by ``seed``) to ``dest``.

    ``hidden_size`` must divide by ``heads``; the MLP is 4x ``hidden_size``; embeddings are tied.
    ``max_positions`` is the context length the config declares. ``tokenizer`` (one from
    ``build_tokenizer``) replaces the one built from ``corpus`` and ``vocab_size``. Returns
    ``dest`` as a Path."""
    import torch  # heavy: torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM  # heavy: transformers

    if hidden_size % heads:
        raise ValueError(f"hidden_size {hidden_size} must be a multiple of heads {heads}")
    dest = Path(dest)
    tokenizer = tokenizer or build_tokenizer(corpus, vocab_size)
    eos = [tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")]
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=4 * hidden_size,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                         max_position_embeddings=max_positions, tie_word_embeddings=True,
                         bos_token_id=None, eos_token_id=eos[0], pad_token_id=tokenizer.pad_token_id)
    with torch.random.fork_rng(devices=[]):  # seeded without touching the caller's RNG
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=tokenizer.pad_token_id)
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    return dest


# --------------------------------------------------------------------------- the quickstart's framing

TOOL_CALL_PIECES = ('{"name": "bash", "arguments": {"command": "', '"}}')
"""The constant text around a bash tool call's command: one token each in the quickstart's
tokenizer, as ``<tool_call>`` is one token in Qwen's."""

PRE_TOKENIZE = r" ?[^\s\p{L}\p{N}]+|\s|\p{N}"
"""Pre-tokens: runs of punctuation (with the space before them), each other whitespace
character, each digit; the letters between them are words. So a name is the same tokens
wherever it stands, in the instruction or in the command: copying it is an exact copy."""


def prompt_messages(task: Task, system_prompt: str) -> list[dict]:
    """The conversation ``TerminalEnv.reset`` opens for ``task`` (``termrl.episode.initial_messages``),
    built without a sandbox: the quickstart's tasks have an empty workspace, so the listing is known."""
    if not starts_empty(task):
        raise ValueError(f"task {task.id}: the quickstart's prompts need an empty workspace; use a "
                         f"single-command family such as one-command")
    return initial_messages(task, system_prompt, workspace_listing(task.workdir, []))


def reference_reply(task: Task) -> str:
    """The task's reference solution as one bash tool call (its script minus shebang and ``set -e``)."""
    lines = [line for line in (task.solution or "").splitlines()
             if line.strip() and not line.startswith("#!") and line.strip() != "set -e"]
    if not lines:
        raise ValueError(f"task {task.id} has no reference solution to imitate")
    return render_tool_call(Action(ActionKind.COMMAND, command="\n".join(lines)))


def quickstart_tokenizer(family: str = "one-command", seeds: int = 3000, vocab_size: int = 1000,
                         system_prompt: str = ""):
    """The quickstart's tokenizer: byte-level BPE trained on ``family``'s own text only (the
    instructions and reference commands of its first ``seeds`` train tasks, the chat roles);
    ``PRE_TOKENIZE`` keeps merges from crossing a space, digit or letter/punctuation boundary, and
    ``TOOL_CALL_PIECES`` are single tokens. The defaults are the quickstart's."""
    fam = get_family(family)
    texts = ["system user assistant tool"]
    for seed in range(seeds):
        task = fam.generate(fam.train_seeds.start + seed)
        texts += [m["content"] for m in prompt_messages(task, system_prompt)] + [reference_reply(task)]
    tokenizer = build_tokenizer(texts, vocab_size, base_corpus=False, pre_tokenize=PRE_TOKENIZE,
                                extra_tokens=TOOL_CALL_PIECES)
    return without_tool_schemas(tokenizer)


def without_tool_schemas(tokenizer):
    """``tokenizer`` (with Qwen2.5's chat template) rendering no tool schemas in the system message.

    A model trained from nothing learns its action format from demonstrations, not from a
    schema: the few hundred tokens of the tools' JSON would only dilute what it must attend to,
    and they are tokens its tokenizer was never trained on. The messages, tool calls and tool
    results render as in Qwen2.5's template; ``response_template`` is set to TRL's parser for it,
    so TRL's GRPO (which passes the tools to the template) still parses the replies' calls."""
    head, sep, rest = tokenizer.chat_template.partition("{%- for message in messages %}")
    if "{%- if tools %}" not in head:
        return tokenizer  # the fallback ChatML template: no tools to drop
    plain = head.split("\n{%- else %}", 1)[1].rsplit("{%- endif %}", 1)[0]  # the outer else, at column 0
    tokenizer.chat_template = plain.lstrip("\n") + sep + rest
    from trl.chat_template_utils import qwen3_template  # heavy: trl (present: the template came from it)

    tokenizer.response_template = qwen3_template
    return tokenizer
