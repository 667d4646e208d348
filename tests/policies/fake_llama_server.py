"""A stand-in for llama.cpp's ``llama-server``: ``/health`` and a streamed ``/completion`` that
answers every prompt with one fixed reply, token by token, as the real server streams (each event's
``tokens`` and ``completion_probabilities``, the end token as a last token event, then a ``stop``
event with ``stop_type`` "eos"). It records each request body and how many token events it wrote.

In a test: ``FakeServer(tokenizer_dir, reply)`` (a thread). As a program (the ``llama-server`` of
a fake llama.cpp build): ``python fake_llama_server.py -m MODEL --port N ...``, reply and tokenizer
from ``FAKE_LLAMA_REPLY`` and ``FAKE_LLAMA_TOKENIZER``; ``FAKE_LLAMA_FAIL`` makes it exit 3 at once.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

END = "<|im_end|>"


class FakeServer:
    def __init__(self, tokenizer_dir, reply: str, port: int = 0, status: int = 200, error: str | None = None):
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
        self.reply, self.status, self.error = reply, status, error
        self.requests: list[dict] = []
        self.written: list[int] = []  # token events written, per request
        self.delay_s = 0.0
        self.in_flight = self.most_in_flight = 0
        lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._json(200, {"status": "ok"}) if self.path == "/health" else self._json(404, {})

            def do_POST(self):
                with lock:
                    fake.in_flight += 1
                    fake.most_in_flight = max(fake.most_in_flight, fake.in_flight)
                try:
                    self._complete()
                finally:
                    with lock:
                        fake.in_flight -= 1

            def _complete(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                if fake.status != 200:
                    return self._json(fake.status, {"error": {"message": "the fake failed"}})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                written = 0
                fake.written.append(0)
                index = len(fake.written) - 1
                try:
                    if fake.error:
                        self._event({"error": {"message": fake.error}})
                        return
                    ids = fake.tokenizer(fake.reply, add_special_tokens=False).input_ids
                    ids = ids[:body["n_predict"]]
                    end = fake.tokenizer.convert_tokens_to_ids(END)
                    for i, token in enumerate(ids + ([end] if len(ids) < body["n_predict"] else [])):
                        time.sleep(fake.delay_s)
                        self._event({"content": "", "tokens": [token], "stop": False,
                                     "completion_probabilities": [{"id": token, "logprob": -0.01 * (i + 1)}]})
                        written += 1
                        fake.written[index] = written
                    self._event({"content": "", "tokens": [], "stop": True,
                                 "stop_type": "eos" if len(ids) < body["n_predict"] else "limit"})
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _event(self, data: dict) -> None:
                self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
                self.wfile.flush()

            def _json(self, status: int, data: dict) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def fake_build(tmp_path: Path, tokenizer_dir, monkeypatch) -> Path:
    """A llama.cpp folder (``TERMRL_LLAMA_CPP``) whose llama-server is this fake, whose converter
    writes a file naming its type and counts its runs (``FAKE_CONVERSIONS``), and whose quantizer
    appends the type it was asked for; conversions go to ``tmp_path``/cache (``TERMRL_CACHE``)."""
    root = tmp_path / "llama.cpp"
    (root / "build" / "bin").mkdir(parents=True)
    server = root / "build" / "bin" / "llama-server"
    server.write_text(f"#!/bin/sh\nexec {sys.executable} {Path(__file__)} \"$@\"\n")
    quantize = root / "build" / "bin" / "llama-quantize"
    quantize.write_text("#!/bin/sh\ncp \"$1\" \"$2\" && echo \"$3\" >> \"$2\"\n")
    for f in (server, quantize):
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
    (root / "convert_hf_to_gguf.py").write_text(
        "import os, sys, pathlib\nargs = sys.argv[1:]\nout = pathlib.Path(args[args.index('--outfile') + 1])\n"
        "out.write_text('GGUF ' + args[args.index('--outtype') + 1] + '\\n')\n"
        "with open(os.environ['FAKE_CONVERSIONS'], 'a') as runs:\n    runs.write('x')\n")
    monkeypatch.setenv("TERMRL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TERMRL_LLAMA_CPP", str(root))
    monkeypatch.setenv("FAKE_LLAMA_TOKENIZER", str(tokenizer_dir))
    monkeypatch.setenv("FAKE_LLAMA_REPLY", "from the started server")
    monkeypatch.setenv("FAKE_LLAMA_ARGS", str(tmp_path / "args.json"))
    monkeypatch.setenv("FAKE_CONVERSIONS", str(tmp_path / "conversions"))
    return root


if __name__ == "__main__":
    if os.environ.get("FAKE_LLAMA_FAIL"):
        print("error: the fake could not load the model", flush=True)
        sys.exit(3)
    args = sys.argv[1:]
    with open(os.environ["FAKE_LLAMA_ARGS"], "w") as f:
        json.dump(args, f)
    server = FakeServer(os.environ["FAKE_LLAMA_TOKENIZER"], os.environ.get("FAKE_LLAMA_REPLY", "ok"),
                        port=int(args[args.index("--port") + 1]))
    server.thread.join()
