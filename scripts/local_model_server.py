"""Serve a GGUF model with llama.cpp's own server (the xllamacpp wheel) until stopped.

Run by ``scripts/local-model start`` with the Python of its own virtual environment (in
the user's cache), not the project's: the OpenAI chat-completions API on 127.0.0.1.
"""

import argparse
import signal

import xllamacpp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--context", type=int, default=4096, help="tokens of context")
    args = parser.parse_args()

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.context
    params.n_parallel = 1  # one answer at a time: two cores, and the context is not split
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.cache_prompt = True  # a prompt sharing a prefix with the last one reuses it
    server = xllamacpp.Server(params)
    print(f"listening on {server.listening_address}", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})


if __name__ == "__main__":
    main()
