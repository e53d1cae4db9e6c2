"""The model protocol on real engines, and the check that says whether one can be used.

Every backend is a callable ``llm(messages, tools) -> AssistantMessage`` (lecture Part IV,
"System prompt, chat template and statelessness": the model is stateless, each call gets the
whole history).  Imports the course's concepts (``lreact.messages``, ``chatml``, ``tools``,
``replies``: the one parser of a raw reply's thinking and calls).  Every backend caps a reply at
``models.DEFAULT_MAX_TOKENS`` unless told otherwise, reads a thinking model's span into
``AssistantMessage.reasoning`` and takes ``LREACT_THINK`` (``models.thinking_setting``).

- ``models``           ScriptedLLM, and OllamaLLM (Ollama's REST API)
- ``openai_compat``    OpenAICompatLLM: llama-server, vLLM, LM Studio; ``engine_errors``: what
                       its failures mean, in one sentence
- ``embedded``         EmbeddedLLM: llama.cpp in this process; ``embedded_models`` (one loaded
                       model per file), ``engine_text`` (chat template, ``enable_thinking``),
                       ``gguf`` (the model file, fetched once), ``call_grammar`` (the engine-side
                       grammar for "grammar on")
- ``ollama_text``      what Ollama's server renders before Qwen2.5's template
- ``backends``         ``configured_llm()``: the backend chosen by LREACT_BACKEND / LREACT_BASE_URL
- ``setup``            ``check_setup()``, with ``setup_openai``, ``setup_embedded`` (each
                       backend's checks) and ``setup_report`` (the report they fill)
"""
