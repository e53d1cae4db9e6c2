"""The context budget counted by the engine, and what its prompt cache saves (lecture Part IV,
"The context budget" and "What the engine can reuse"; second lab, Part D.2, the methods table).

``lreact.traces`` estimates tokens as characters / 4.  The engine knows the real number:

- ``engine_prompt_tokens(llm, messages, tools)``: the prompt tokens of one call as the configured
  engine counts them: the embedded model's tokenizer on the course's ChatML, Ollama's
  ``prompt_eval_count``, an OpenAI-compatible engine's ``usage.prompt_tokens`` (one token is
  generated to get the count); ``budget_lines`` sets them beside characters / 4;
- ``CountingCompletion(llm)``: a ``complete(prompt, stop) -> str`` that keeps the engine's
  counts of every call in ``.calls`` (prompt tokens, generated tokens, and, where the engine
  says, how many prompt tokens it had to evaluate and how long that took).  On the embedded
  engine it keeps llama.cpp's KV cache between calls (``Llama.generate`` reuses the longest
  common token prefix of the last evaluation), as Ollama and llama-server do for their clients;
- ``prefix_reuse(llm, first, seconds)``: second calls measured from the same cache state, one
  with a byte-identical prefix and others rewritten (as compaction does): tokens computed and
  prompt time, from the engine's own counters; ``compaction_example()`` gives such prompts from
  the lecture's multi-tool run, ``reuse_lines`` prints the measurement, ``configured_engine()``
  gives the engine or says why there is none.
"""
from __future__ import annotations

import time

from ..chatml import render_chatml
from ..engines.backends import configured_llm
from ..engines.models import ModelError
from ..messages import AssistantMessage, SystemMessage, ToolResultMessage
from ..traces import TRACES, context_tokens, model_calls, multi_tool_trace

ENGINE_TIMEOUT = 120.0   # seconds for one call


def _backend(llm) -> str:
    return getattr(llm, "backend", "")


def _loaded(llm):
    m = llm.loaded()
    return m, m.llama


def _perf(llama):
    import llama_cpp

    data = llama_cpp.llama_perf_context(llama.ctx)
    # n_p_eval: tokens llama.cpp decoded in prompt batches (a one-token suffix would count as a
    # generation step instead); t_p_eval_ms: the time those took
    return {"evaluated": int(data.n_p_eval), "prompt_ms": float(data.t_p_eval_ms)}


class CountingCompletion:
    """``complete(prompt, stop) -> str`` on ``llm`` (an ``EmbeddedLLM``, ``OllamaLLM`` or
    ``OpenAICompatLLM``), greedy (temperature 0, seed 0), at most ``max_tokens`` per reply.

    ``.calls`` gets one dict per call: ``prompt_tokens`` and ``completion_tokens`` (the engine's
    counts), ``evaluated`` (prompt tokens the engine actually computed; None when it does not
    say) and ``prompt_ms`` (its prompt-evaluation time; None when it does not say).
    """

    def __init__(self, llm, *, max_tokens=200, timeout=ENGINE_TIMEOUT):
        if _backend(llm) not in ("embedded", "ollama", "openai"):
            raise TypeError(f"llm must be an EmbeddedLLM, OllamaLLM or OpenAICompatLLM, got "
                            f"{type(llm).__name__}")
        self.llm, self.max_tokens, self.timeout = llm, int(max_tokens), float(timeout)
        self.calls = []

    @property
    def last(self) -> dict:
        return self.calls[-1] if self.calls else {}

    def __call__(self, prompt, stop=None) -> str:
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        text, usage = getattr(self, "_" + _backend(self.llm))(prompt, stops)
        self.calls.append(usage)
        return text

    def _embedded(self, prompt, stops):
        import llama_cpp

        m, llama = _loaded(self.llm)
        tokens = m.tokens(prompt)
        if len(tokens) + 1 >= m.n_ctx:
            raise ModelError(f"The prompt is {len(tokens)} tokens, but the context window holds "
                             f"{m.n_ctx}: shorten it, or load the model with a larger n_ctx.")
        deadline = time.monotonic() + self.timeout

        def past_deadline(_ids, _logits):
            if time.monotonic() > deadline:
                raise TimeoutError
            return False

        with m.lock:
            llama_cpp.llama_perf_context_reset(llama.ctx)
            try:   # no reset(): llama.cpp reuses the common prefix of its last evaluation
                result = llama.create_completion(
                    tokens, max_tokens=min(self.max_tokens, m.n_ctx - len(tokens) - 1),
                    temperature=0.0, top_k=1, top_p=1.0, min_p=0.0, repeat_penalty=1.0, seed=0,
                    stop=stops or None,
                    stopping_criteria=llama_cpp.StoppingCriteriaList([past_deadline]))
            except TimeoutError:
                llama.reset()
                raise ModelError(f"The model did not finish within {self.timeout:g} s: pass a "
                                 "larger timeout= or a smaller max_tokens=.") from None
            perf = _perf(llama)
        usage = result.get("usage") or {}
        return result["choices"][0]["text"], {
            "prompt_tokens": usage.get("prompt_tokens", len(tokens)),
            "completion_tokens": usage.get("completion_tokens"), **perf}

    def _ollama(self, prompt, stops):
        data = self.llm.generate_raw(prompt, stop=stops or None, max_tokens=self.max_tokens,
                                     temperature=0, seed=0)
        ms = data.get("prompt_eval_duration")
        return data["response"], {
            "prompt_tokens": data.get("prompt_eval_count"),
            "completion_tokens": data.get("eval_count"),
            # Ollama's prompt_eval_count is the whole prompt, cached part included: the tokens
            # actually computed are not reported (its prompt_eval_duration still shows the cache)
            "evaluated": None,
            "prompt_ms": ms / 1e6 if isinstance(ms, (int, float)) else None}

    def _openai(self, prompt, stops):
        result = self.llm.complete_raw(prompt, stop=stops or None, max_tokens=self.max_tokens,
                                       temperature=0, seed=0)
        return (result.choices[0].text or ""), _openai_usage(result)


def _openai_usage(result) -> dict:
    """Counts from an OpenAI-style response: ``usage`` and, where the engine adds them,
    ``usage.prompt_tokens_details.cached_tokens`` and llama-server's ``timings``."""
    usage = getattr(result, "usage", None)
    prompt = getattr(usage, "prompt_tokens", None)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    timings = (getattr(result, "model_extra", None) or {}).get("timings") or {}
    evaluated = timings.get("prompt_n")
    if evaluated is None and cached is not None and prompt is not None:
        evaluated = prompt - cached
    return {"prompt_tokens": prompt, "completion_tokens": getattr(usage, "completion_tokens", None),
            "evaluated": evaluated, "prompt_ms": timings.get("prompt_ms")}


def engine_prompt_tokens(llm, messages, tools=None) -> int:
    """The prompt tokens of one call with ``messages`` and ``tools``, counted by the engine: the
    embedded model's tokenizer on the course's ChatML (``render_chatml``, the text the estimate
    is taken of); a server's count of the prompt it built with its own template."""
    backend = _backend(llm)
    if backend == "embedded":   # its tokenizer on the very text characters / 4 was taken of
        from ..chatml import render_chatml

        return len(_loaded(llm)[0].tokens(render_chatml(list(messages), tools)))
    if backend == "ollama":
        from ..messages import messages_to_wire

        data = llm.chat_raw(messages_to_wire(messages), tools=tools,
                            options={"num_predict": 1, "temperature": 0})
        if not isinstance(data.get("prompt_eval_count"), int):
            raise ModelError("Ollama did not report prompt_eval_count for this call.")
        return data["prompt_eval_count"]
    if backend == "openai":
        import openai

        from ..engines.openai_compat import messages_to_openai

        extra = {"tools": list(tools), "tool_choice": "auto"} if tools else {}
        try:
            result = llm.client.chat.completions.create(
                model=llm.resolved_model(), messages=messages_to_openai(messages), max_tokens=1,
                temperature=0, **extra)
        except openai.OpenAIError as e:
            raise ModelError(f"The engine at {llm.base_url} could not count the prompt "
                             f"({type(e).__name__}: {str(e)[:160]})") from None
        count = getattr(getattr(result, "usage", None), "prompt_tokens", None)
        if not isinstance(count, int):
            raise ModelError(f"The engine at {llm.base_url} reported no usage.prompt_tokens.")
        return count
    raise TypeError(f"no engine behind a {type(llm).__name__}: use configured_llm()")


def prefix_reuse(llm, first: str, seconds: dict, *, repeats=3, progress=None) -> dict:
    """Measure second calls after ``first`` from the same cache state: ``seconds`` maps a label
    to a prompt; the first one must start with ``first`` byte for byte (the appended call), the
    others must not (the call rewritten, as compaction does).  They take turns, ``repeats``
    times each.  Returns ``{label: usage}``: each usage as in ``CountingCompletion.calls``, with
    the median ``prompt_ms`` (the engine's own prompt time; None when it does not report one)
    and the median wall time ``wall_s``.  On the embedded engine the cache state after ``first``
    is saved once and restored before every measured call (``Llama.save_state`` /
    ``load_state``); on a server ``first`` is sent again before each (its cache is its own).
    ``progress``: called with a line after each measured call."""
    import statistics

    labels = list(seconds)
    if not labels or not seconds[labels[0]].startswith(first):
        raise ValueError("the first of seconds must start with first, byte for byte")
    if any(seconds[k].startswith(first) for k in labels[1:]):
        raise ValueError("the other seconds must change the start of first (as compaction does)")
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a whole number of at least 1, got {repeats!r}")
    complete = CountingCompletion(llm, max_tokens=1)
    embedded = _backend(llm) == "embedded"
    if embedded:
        m, llama = _loaded(llm)
        with m.lock:
            llama.reset()
            complete(first)
            state = llama.save_state()
    seen = {k: [] for k in labels}
    for _ in range(repeats):
        for label in labels:
            if embedded:
                with m.lock:
                    llama.load_state(state)
            else:
                complete(first)
            started = time.perf_counter()
            complete(seconds[label])
            seen[label].append({**complete.last, "wall_s": time.perf_counter() - started})
            if progress is not None:
                progress(f"  measured: {label} ({seen[label][-1]['wall_s']:.1f} s)")
    out = {}
    for label, runs in seen.items():
        times = [r["prompt_ms"] for r in runs]
        out[label] = {**runs[-1], "repeats": repeats,
                      "prompt_ms": statistics.median(times) if None not in times else None,
                      "wall_s": statistics.median(r["wall_s"] for r in runs)}
    return out


def compaction_example(stamp=None) -> dict:
    """Prompts from the lecture's multi-tool run (``lreact.traces``), as ChatML text:
    ``{"first": <its third model call>, "seconds": {...}}`` with the fourth call three ways:
    ``"same prefix"`` (the third plus what was appended since), ``"compacted"`` (its first tool
    turn, two calls and their results, replaced by a one-line summary of the results) and
    ``"stamped"`` (a time stamp ``stamp``, default now, added to the system prompt)."""

    history, tools = multi_tool_trace()
    calls = model_calls(history)
    fourth = calls[3]
    turn = next(i for i, m in enumerate(fourth) if isinstance(m, AssistantMessage))
    end = turn + 1 + len(fourth[turn].tool_calls)
    facts = "; ".join(f"{c.name}({c.arguments}) gave {r.content}" for c, r in
                      zip(fourth[turn].tool_calls, fourth[turn + 1:end])
                      if isinstance(r, ToolResultMessage))
    compacted = fourth[:turn] + [AssistantMessage(f"(summary of earlier turns) {facts}.")] + \
        fourth[end:]
    stamp = stamp or time.strftime("%Y-%m-%d %H:%M")
    stamped = [SystemMessage(f"Current time: {stamp}. {fourth[0].content}")] + fourth[1:]
    return {"first": render_chatml(calls[2], tools),
            "seconds": {"same prefix": render_chatml(fourth, tools),
                        "compacted": render_chatml(compacted, tools),
                        "stamped": render_chatml(stamped, tools)}}


def configured_engine(timeout=ENGINE_TIMEOUT):
    """``(llm, None)`` for the configured backend, or ``(None, why)`` in plain words.  The
    embedded engine is used only when its model file is already on this machine (a lecture cell
    never starts a download); a server is reached at its first call (catch ``ModelError``)."""

    try:
        llm = configured_llm(timeout=timeout)
        if _backend(llm) == "embedded":
            llm.loaded(download=False)
        return llm, None
    except (ModelError, ValueError) as e:
        return None, str(e)


def budget_lines(llm=None) -> list:
    """Part IV's budget view per call of the two runs: characters / 4 beside the engine's count
    (``engine_prompt_tokens``) and the difference; with ``llm=None`` the estimate alone."""

    lines = []
    for name, make in TRACES.items():
        history, tools = make()
        lines.append(f"{name}:")
        for k, sent in enumerate(model_calls(history), start=1):
            estimate = context_tokens(sent, tools)
            if llm is None:
                lines.append(f"  call {k}: {estimate:>4} tokens (characters / 4)")
                continue
            counted = engine_prompt_tokens(llm, sent, tools)
            lines.append(f"  call {k}: {estimate:>4} by characters / 4, {counted:>4} counted by "
                         f"the engine: {counted - estimate:+d} tokens, "
                         f"{counted / estimate:.2f} x the estimate")
    return lines


def measure_reuse(llm, *, repeats=1, progress=None) -> dict:
    """``prefix_reuse`` of ``compaction_example()`` on ``llm`` (Part IV, "The cache, measured")."""
    return prefix_reuse(llm, **compaction_example(), repeats=repeats, progress=progress)


def saving(result) -> tuple | None:
    """(prompt tokens the cached prefix saved, prompt tokens) of the appended call of a
    ``measure_reuse`` result; None when the engine does not say what it computed."""
    same = result["same prefix"]
    if same["evaluated"] is None:
        return None
    return same["prompt_tokens"] - same["evaluated"], same["prompt_tokens"]


def reuse_lines(result) -> list:
    """A ``measure_reuse`` result as a short table: per version the prompt tokens, the tokens
    the engine computed and its prompt time, then what the cached prefix saved."""
    repeats = next(iter(result.values()))["repeats"]
    runs = "" if repeats == 1 else f" (median of {repeats})"
    lines = [f"{'version':<12} {'prompt':>6} {'computed':>8}  prompt time{runs}"]
    for label, r in result.items():
        evaluated = "?" if r["evaluated"] is None else r["evaluated"]
        timing = "not reported" if r["prompt_ms"] is None else f"{r['prompt_ms']:.0f} ms"
        lines.append(f"{label:<12} {r['prompt_tokens']:>6} {evaluated:>8}  {timing}")
    if saving(result):
        saved, total = saving(result)
        lines.append(f"The cached prefix saved {saved} of {total} prompt tokens "
                     f"({saved / total:.0%}).")
    same = result["same prefix"]
    others = [label for label, r in list(result.items())[1:]
              if same["prompt_ms"] and r["prompt_ms"] is not None]
    if others:
        lines.append("Prompt time against the same prefix: " + ", ".join(
            f"{label} {result[label]['prompt_ms'] / same['prompt_ms']:.1f} x" for label in others)
            + ".")
    if same["prompt_ms"] is None:
        lines.append("This engine reports no prompt-evaluation time, so the speed-up cannot be "
                     "measured here (Ollama reports prompt_eval_duration, llama-server "
                     "timings.prompt_ms).")
    return lines


def first_call_counts(llm) -> tuple:
    """(characters / 4, the engine's count) of the first call of the Berlin trace."""
    history, tools = next(iter(TRACES.values()))()
    sent = model_calls(history)[0]
    return context_tokens(sent, tools), engine_prompt_tokens(llm, sent, tools)
