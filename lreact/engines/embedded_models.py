"""The llama.cpp models loaded in this process (``lreact.engines.embedded``'s engine room).

Loading a GGUF file takes seconds and its weights take memory, so each file is loaded once per
process and context size (``MODELS``, a ``ModelCache``) and shared by every ``EmbeddedLLM``:
``check_setup()`` loads it, the notebook's first live cell reuses it.  A ``LoadedModel`` holds
the ``Llama`` object, a lock (one generation at a time), the context size and the chat template
its prompts are rendered with (``lreact.engines.engine_text.ChatTemplate``).
"""
from __future__ import annotations

import atexit
import os
import threading
import time

import numpy as np

from .engine_text import ChatTemplate
from .models import ModelError


class EmbeddedError(ModelError):
    """The embedded llama.cpp engine could not answer; the message says what to do."""


class LoadedModel:
    """One llama.cpp model in this process: the ``Llama`` object, a lock (one generation at a
    time), its context size and the chat template its prompts are rendered with."""

    def __init__(self, path: str, n_ctx: int):
        try:
            import llama_cpp
        except ImportError:
            raise EmbeddedError("llama-cpp-python is not installed in this environment: run "
                                "`make setup` (it builds it), or `pip install "
                                "llama-cpp-python`, then restart the kernel.") from None
        started = time.perf_counter()
        try:
            # half the cores, for prompts too (llama.cpp would take them all there): its threads
            # wait for each other at every step, so a thread more than the machine has free
            # makes a prompt several times slower, not faster (lreact.views.waiting)
            threads = max((os.cpu_count() or 2) // 2, 1)
            self.llama = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, seed=0, verbose=False,
                                         n_threads=threads, n_threads_batch=threads)
        except (ValueError, RuntimeError, OSError) as e:
            raise EmbeddedError(
                f"llama.cpp could not load {os.path.basename(path)} ({e}). Is it a complete "
                "GGUF model file? A download cut short is smaller than it should be: delete it "
                "and fetch it again (`make model`).") from None
        self.load_seconds = time.perf_counter() - started
        self.path, self.n_ctx = path, self.llama.n_ctx()
        self.n_ctx_train = int(llama_cpp.llama_model_n_ctx_train(self.llama.model))
        self.n_vocab = self.llama.n_vocab()
        self.lock = threading.RLock()
        self.template = ChatTemplate(self.llama.metadata.get("tokenizer.chat_template"),
                                     eos_token=self.token_text(self.llama.token_eos()),
                                     bos_token=self.token_text(self.llama.token_bos()))
        self._vocab = llama_cpp.llama_model_get_vocab(self.llama.model)
        self._llama_cpp = llama_cpp
        self._kept = None    # (prompt tokens, cache size) after EmbeddedLLM's last reply

    def keep_prefix(self, tokens):
        """Note the prompt just answered and the cache it left (``grown_prefix``)."""
        self._kept = (list(tokens), self.llama.n_tokens)

    def grown_prefix(self, tokens) -> int:
        """How many prompt tokens the cache can give when ``tokens`` only grew from the last
        prompt ``keep_prefix`` noted and nothing has touched the cache since: the longest
        common prefix of the cache and ``tokens`` (one token short of all of them, as
        llama-cpp-python evaluates at least one); 0 otherwise (start afresh)."""
        if self._kept is None:
            return 0
        prompt, size = self._kept
        if self.llama.n_tokens != size or len(tokens) <= len(prompt) or \
                tokens[:len(prompt)] != prompt:
            return 0
        cached = self.llama._input_ids[:size].tolist()
        n = next((i for i, (a, b) in enumerate(zip(cached, tokens)) if a != b),
                 min(len(cached), len(tokens)))
        return min(n, len(tokens) - 1)

    def token_text(self, token: int) -> str:
        if token < 0:
            return ""
        return self.llama.detokenize([token], special=True).decode("utf-8", errors="replace")

    def is_end(self, token: int) -> bool:
        return bool(self._llama_cpp.llama_vocab_is_eog(self._vocab, token))

    def tokens(self, text: str) -> list:
        """``text`` as the model's tokens, special tokens parsed, BOS added if the model wants."""
        return self.llama.tokenize(text.encode("utf-8"), add_bos=True, special=True)

    def last_logits(self) -> np.ndarray:
        """The logits of the last evaluated position, over the whole vocabulary (a copy)."""
        ptr = self._llama_cpp.llama_get_logits_ith(self.llama.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).astype(np.float64)


class ModelCache:
    """The models loaded in this process, one per (file, context size): loading is slow and the
    weights are large, so every ``EmbeddedLLM`` on the same file shares one."""

    def __init__(self):
        self._models = {}
        self._lock = threading.Lock()

    def get(self, path: str, n_ctx: int) -> LoadedModel:
        key = (os.path.realpath(path), int(n_ctx))
        with self._lock:
            if key not in self._models:
                self._models[key] = LoadedModel(*key)
            return self._models[key]

    def loaded(self, path: str, n_ctx: int) -> bool:
        return (os.path.realpath(path), int(n_ctx)) in self._models

    def close(self) -> None:
        """Free every model (at interpreter exit, before the binding's globals are torn down)."""
        with self._lock:
            for model in self._models.values():
                model.llama.close()
            self._models.clear()


MODELS = ModelCache()
atexit.register(MODELS.close)


def log_softmax(z) -> "np.ndarray":
    """Log-probabilities from a row of logits (max-shifted, so no overflow): what every reader
    of a model's full distribution (the embedded engine, the lens, the first lab's A.8) uses."""
    import numpy as np
    z = np.asarray(z, dtype=float) - np.max(z)
    return z - np.log(np.exp(z).sum())
