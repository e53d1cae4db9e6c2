"""``EmbeddedLLM``: the lab's model protocol on llama.cpp inside this process (no server).

Lecture Part III, "Function calling: defining and advertising tools" (the inference engine is
not the runtime) and Part IV, "System prompt, chat template and statelessness".  Where Ollama
or llama-server run the engine in another process, here llama-cpp-python (the official Python
binding of llama.cpp) runs it in the notebook's kernel; the rest is what those engines do:

- the conversation is rendered with the model's own chat template from the GGUF file, or the
  course's Qwen2.5 ChatML (``lreact.engines.engine_text``), then continued as text;
- the reply is taken apart by ``lreact.parse_reply``: a thinking span (``<think>...</think>``,
  or a reply that starts inside a prefilled ``<think>``) goes to ``reasoning``, and every
  ``<tool_call>`` block, in Qwen2.5/Qwen3's JSON grammar or Qwen3.5's XML grammar (values
  converted by the tool's schema), becomes a ``ToolCall`` with a unique id; a reply that is not a
  valid call comes back as the text the model wrote;
- a template with a thinking switch (Qwen3, Qwen3.5: ``enable_thinking``) gets it from
  ``think=`` or ``$LREACT_THINK`` (``on``/``off``; auto, the default, leaves the template's
  default); ``chat_template=`` replaces the GGUF file's template with another Jinja text (as
  llama-server's ``--chat-template-file`` does);
- a call whose prompt only grew from the previous call's (the same history with the reply and
  new messages appended, as in every step of a ReAct loop) keeps llama.cpp's cache of that prefix
  and computes only what was appended, as Ollama and llama-server do; any other prompt starts
  afresh.  So a conversation's first call is always computed from the start, its later calls
  the same way in every run, and at temperature 0, or with a fixed seed, a rerun repeats
  exactly, whatever ran in between.  ``last["reused"]`` says how many prompt tokens the cache
  saved (lecture Part IV, "The cache, measured");
- ``tool_grammar=True`` constrains every reply to tools to a well-formed ``<tool_call>`` for
  one of them or plain prose (a GBNF grammar: ``lreact.engines.call_grammar``; second lab C.4, "Does
  sampling break tool calls?");
- ``timeout`` bounds the generation (checked at every token); ``max_tokens`` caps a reply
  (``DEFAULT_MAX_TOKENS``, 512, unless set: the same cap as the other backends; ``last["cut"]``
  says whether it ended the last reply); an input longer than the context window is an error
  that says both sizes.

The model is loaded once per process and file (``MODELS``, keyed by path and context size):
``check_setup()`` loads it, and every ``EmbeddedLLM`` after that reuses it.  Besides the protocol
it offers ``complete`` (raw text, second lab Part D), ``chat_text`` (optionally constrained to a
JSON schema by a grammar, second lab C.4) and the log-probabilities of the next token over the
whole vocabulary (``next_token_logprobs``, ``first_token_logprobs``, ``token_logprobs``).
"""
from __future__ import annotations

import itertools
import json
import os
import random
import time

import numpy as np

from ..messages import AssistantMessage, new_call_id
from ..replies import THINK_OPEN, original, parse_reply, split_reasoning
from .embedded_models import MODELS, EmbeddedError, LoadedModel, log_softmax
from .engine_text import IM_END, ChatTemplate
from .gguf import DEFAULT_GGUF_FILE, GGUF_ENV_VAR, locate
from .models import (
    DEFAULT_MAX_TOKENS,
    _check_history,
    _require_timeout,
    reply_run,
    thinking_setting,
)

DEFAULT_N_CTX = 4096
DEFAULT_TIMEOUT = 120.0
SAMPLING_DEFAULTS = {"temperature": 0.8, "top_p": 0.95, "top_k": 40}
CHAT_STOPS = [IM_END, "<|im_start|>"]


class _Timeout(Exception):
    pass


def _as_list(stop) -> list:
    if stop is None:
        return []
    return [stop] if isinstance(stop, str) else list(stop)


class EmbeddedLLM:
    """A GGUF model run by llama.cpp in this process.

    ``EmbeddedLLM(model_path=None, *, n_ctx=4096, timeout=120, temperature=0.8, top_p=0.95,
    top_k=40, seed=None, max_tokens=512, stop=None, tool_grammar=False, think=None,
    chat_template=None)``.  ``model_path`` defaults to
    ``$LREACT_GGUF``, else the course's default model (``lreact.engines.gguf``: found in the Hugging Face
    cache or fetched once).  Creating the object loads nothing; the first call loads the model,
    or reuses the one already loaded in this process.  No seed means a fresh random seed per call.
    ``tool_grammar=True``: a call with tools can only reply with one well-formed call of one of
    them or with prose that holds no call (``lreact.engines.call_grammar.tool_call_gbnf``).
    """

    backend = "embedded"
    OPTION_NAMES = ("temperature", "top_p", "top_k", "seed", "max_tokens", "stop")

    def __init__(self, model_path=None, *, n_ctx=DEFAULT_N_CTX, timeout=DEFAULT_TIMEOUT,
                 tool_grammar=False, think=None, chat_template=None, **options):
        unknown = set(options) - set(self.OPTION_NAMES)
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)}; known: "
                            f"{', '.join(self.OPTION_NAMES)}")
        if not isinstance(n_ctx, int) or n_ctx < 64:
            raise ValueError(f"n_ctx must be a whole number of tokens (64 or more), got {n_ctx!r}")
        self.model_path = os.fspath(model_path) if model_path is not None else None
        self.n_ctx = n_ctx
        if not isinstance(tool_grammar, bool):
            raise TypeError(f"tool_grammar must be True or False, got {tool_grammar!r}")
        self.tool_grammar = tool_grammar
        self.think = thinking_setting(think)
        if chat_template is not None and not (isinstance(chat_template, str) and chat_template):
            raise TypeError("chat_template must be the text of a Jinja chat template")
        self.chat_template = chat_template
        self._own_template = None
        self.timeout = _require_timeout(timeout)
        self.options = {k: v for k, v in options.items() if v is not None}
        self.last = {}      # the last reply's run: tokens, finish, cap, cut (``reply_run``)
        self._seen_ids = set()
        self._counter = itertools.count(1)

    @property
    def model(self) -> str:
        """The model's file name (for reports)."""
        path = self.model_path or os.environ.get(GGUF_ENV_VAR, "").strip()
        return os.path.basename(path) if path else DEFAULT_GGUF_FILE

    def __repr__(self):
        grammar = ", tool_grammar=True" if self.tool_grammar else ""
        return (f"EmbeddedLLM(model={self.model!r}, n_ctx={self.n_ctx}, options={self.options}"
                f"{grammar})")

    def loaded(self, download: bool = True) -> LoadedModel:
        """The loaded model (loading it now if this process has not yet)."""
        if self.model_path is None:
            self.model_path = locate(download=download).path
        return MODELS.get(self.model_path, self.n_ctx)

    # -- the protocol ------------------------------------------------------------------------
    def __call__(self, messages, tools=None) -> AssistantMessage:
        _check_history(messages, tools)
        m = self.loaded()
        grammar = None
        if self.tool_grammar and tools:
            from llama_cpp import LlamaGrammar

            from .call_grammar import tool_call_gbnf

            grammar = LlamaGrammar.from_string(tool_call_gbnf(tools), verbose=False)
        prompt = self.template(m).render(messages, tools, thinking=self.think)
        text = self._generate(m, prompt, stop=CHAT_STOPS, grammar=grammar)
        if prompt.rstrip().endswith(THINK_OPEN):
            # the template prefilled <think> (Qwen3's Thinking-2507 models): the reply starts
            # inside the span, so a reply cut while thinking is still thinking, not an answer
            text = THINK_OPEN + text
        if not tools:
            # engine code: the unguarded originals (a lab's setup cell guards them for answers)
            reasoning, answer = original(split_reasoning)(text.replace(IM_END, ""))
            return AssistantMessage(text=answer.strip(), reasoning=reasoning)
        return original(parse_reply)(text, tools, new_id=self._fresh_id)

    def template(self, m: LoadedModel) -> ChatTemplate:
        """The chat template prompts are rendered with: ``chat_template=`` when given, else the
        model file's (``LoadedModel.template``)."""
        if self.chat_template is None:
            return m.template
        if self._own_template is None:
            self._own_template = ChatTemplate(self.chat_template,
                                              eos_token=m.token_text(m.llama.token_eos()),
                                              bos_token=m.token_text(m.llama.token_bos()))
        return self._own_template

    def chat_text(self, messages, *, json_schema=None) -> str:
        """The text of one reply (no tools); with ``json_schema`` decoding is constrained to it
        by a grammar (llama.cpp's GBNF made from the schema: structured outputs)."""
        _check_history(messages, None)
        m = self.loaded()
        grammar = None
        if json_schema is not None:
            from llama_cpp import LlamaGrammar

            try:
                grammar = LlamaGrammar.from_json_schema(json.dumps(json_schema), verbose=False)
            except Exception as e:   # the converter raises plain Exceptions for unsupported parts
                raise EmbeddedError(f"This engine cannot turn that JSON schema into a grammar "
                                    f"({type(e).__name__}: {e}).") from None
        return self._generate(m, self.template(m).render(messages, thinking=self.think),
                              stop=CHAT_STOPS, grammar=grammar).strip()

    def complete(self, prompt: str, *, stop=None, max_tokens=None, **options) -> str:
        """Continue the raw text ``prompt`` (no chat template), stopping before any string of
        ``stop`` (not returned)."""
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        unknown = set(options) - set(self.OPTION_NAMES)
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)}")
        return self._generate(self.loaded(), prompt, stop=_as_list(stop), max_tokens=max_tokens,
                              **options)

    # -- log-probabilities -------------------------------------------------------------------
    def next_token_logprobs(self, messages) -> np.ndarray:
        """The log-probabilities of the first reply token to ``messages`` (or of the token after
        a raw prompt ``str``) over the whole vocabulary, before any sampling setting."""
        m = self.loaded()
        prompt = messages if isinstance(messages, str) else \
            self.template(m).render(messages, thinking=self.think)
        with m.lock:
            tokens = self._fit(m, prompt, 1)[0]
            m.llama.reset()
            self._run(lambda: m.llama.eval(tokens))
            return log_softmax(m.last_logits())

    def first_token_logprobs(self, messages, top_logprobs=20):
        """The ``top_logprobs`` most probable first tokens (``None``: all of the vocabulary) as
        ``(token, logprob)`` pairs, most probable first (as ``OllamaLLM.first_token_logprobs``)."""
        logprobs = self.next_token_logprobs(messages)
        order = np.argsort(-logprobs, kind="stable")
        if top_logprobs is not None:
            order = order[:int(top_logprobs)]
        m = self.loaded()
        return [(m.token_text(int(i)), float(logprobs[i])) for i in order]

    def token_logprobs(self, messages, *, max_tokens=16, top=5, **options):
        """Generate a reply token by token and return, per token, ``{"token", "logprob", "top"}``
        (``top``: the ``top`` most probable alternatives as ``(token, logprob)``)."""
        m = self.loaded()
        opts = self._sampling(options)
        out = []
        with m.lock:
            tokens, limit = self._fit(m, self.template(m).render(messages, thinking=self.think),
                                      int(max_tokens))
            m.llama.reset()
            m.llama.set_seed(opts.pop("seed"))
            steps = m.llama.generate(tokens, temp=opts["temperature"], top_p=opts["top_p"],
                                     top_k=opts["top_k"], min_p=0.0, repeat_penalty=1.0)
            for token in steps:
                logprobs = log_softmax(m.last_logits())
                if m.is_end(token) or len(out) >= limit:
                    break
                best = np.argsort(-logprobs, kind="stable")[:top]
                out.append({"token": m.token_text(token), "logprob": float(logprobs[token]),
                            "top": [(m.token_text(int(i)), float(logprobs[i])) for i in best]})
        return out

    # -- machinery ---------------------------------------------------------------------------
    def _sampling(self, options) -> dict:
        opts = {**SAMPLING_DEFAULTS, **self.options,
                **{k: v for k, v in options.items() if v is not None}}
        if opts.get("seed") is None:
            opts["seed"] = random.SystemRandom().randrange(2**31)
        return opts

    def _fit(self, m: LoadedModel, prompt: str, reply: int):
        """The prompt's tokens and the reply length that fits the context window."""
        tokens = m.tokens(prompt)
        if len(tokens) >= m.n_ctx:
            raise EmbeddedError(
                f"The input is {len(tokens)} tokens, but the model's context window holds "
                f"{m.n_ctx} tokens (n_ctx), so the model cannot read it. Shorten the history "
                f"(compact it: second lab, Part C), or create the model with a larger n_ctx= "
                f"(this model was trained for up to {m.n_ctx_train}).")
        return tokens, min(reply, m.n_ctx - len(tokens))

    def _run(self, step):
        try:
            return step()
        except _Timeout:
            raise EmbeddedError(
                f"The model did not finish within the timeout of {self.timeout:g} s. Pass a "
                "larger timeout=, or a smaller max_tokens= to cap the reply.") from None
        except (RuntimeError, ValueError) as e:
            raise EmbeddedError(f"llama.cpp failed on this request ({e}). Shorten the input, or "
                                "restart the kernel if it happens again.") from None

    def _generate(self, m: LoadedModel, prompt: str, *, stop, max_tokens=None, grammar=None,
                  **options) -> str:
        from llama_cpp import StoppingCriteriaList

        opts = self._sampling(options)
        wanted = int(max_tokens or opts.get("max_tokens") or DEFAULT_MAX_TOKENS)
        stops = list(stop) + _as_list(opts.get("stop"))
        deadline = time.monotonic() + self.timeout

        def past_deadline(_ids, _logits):
            if time.monotonic() > deadline:
                raise _Timeout
            return False

        with m.lock:
            tokens, limit = self._fit(m, prompt, wanted)
            reused = m.grown_prefix(tokens)
            if not reused:
                m.llama.reset()  # not a grown history: computed from the start
            result = self._run(lambda: m.llama.create_completion(
                tokens, max_tokens=limit, temperature=opts["temperature"], top_p=opts["top_p"],
                top_k=opts["top_k"], min_p=0.0, repeat_penalty=1.0, seed=opts["seed"],
                stop=stops or None, grammar=grammar,
                stopping_criteria=StoppingCriteriaList([past_deadline])))
            m.keep_prefix(tokens)
        choice = result["choices"][0]
        usage = result.get("usage") or {}
        self.last = reply_run(usage.get("prompt_tokens", len(tokens)),
                              usage.get("completion_tokens"), choice.get("finish_reason"), limit)
        self.last["reused"] = reused
        return choice["text"]

    def _fresh_id(self) -> str:
        while True:
            candidate = f"call_{next(self._counter)}_{new_call_id()[5:]}"
            if candidate not in self._seen_ids:
                self._seen_ids.add(candidate)
                return candidate
