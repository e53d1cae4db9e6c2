"""The reasoning path of every backend, and the one reply cap.

- the message types: ``AssistantMessage.reasoning``, carried in each engine's field by the wire
  converters;
- Ollama (``tests/fixtures/ollama/chat_think*.json``): ``think`` sent when asked
  (``LREACT_THINK``), ``message.thinking`` read, the current episode's thinking sent back, a
  reply cut by the cap, a model that cannot think;
- OpenAI-compatible engines (``tests/fixtures/openai/*reasoning*.json``): ``reasoning_content``
  (llama-server), ``reasoning`` (vLLM) and thinking left in the text, each sent back in the
  engine's own field;
- the embedded engine: a chat template with ``enable_thinking`` gets it, earlier thinking reaches
  the template as ``reasoning_content``, and on the real engine (SmolLM2, its output forced into
  the format by a grammar) a prefilled ``<think>`` and an XML call come apart.

The thinking exchanges are constructed in the documented shapes (each file's description says
so): no Qwen3 runs on the build machines.
"""
import json
import pathlib

import pytest
from conftest import load_recording, replay_recording
from test_embedded import MODEL, real_model
from test_openai_recorded import Engine, replay, sent

from lreact import (AssistantMessage, OllamaError, OllamaLLM, OpenAICompatLLM, SystemMessage,
                    ToolCall, ToolResultMessage, UserMessage, message_from_wire, messages_to_wire)
from lreact.engines import embedded, models
from lreact.engines.engine_text import ChatTemplate
from lreact.engines.openai_compat import messages_to_openai
from lreact.tools import TOOLS

HOST = "http://127.0.0.1:11434"
OPTIONS = dict(temperature=0, top_k=40, top_p=0.9, seed=42)
SYSTEM = SystemMessage("You are a helpful assistant. Use the tools when they help.")
BERLIN = UserMessage("What's the weather in Berlin?")
THOUGHT1 = ("The user wants the current weather in Berlin. I have a get_weather tool that takes a "
            "city, so I call it with Berlin.")
THOUGHT2 = "The tool says 12°C and rainy. I can answer now."
TEMPLATE = (pathlib.Path(__file__).parent / "fixtures" / "templates" /
            "qwen35_style_constructed.jinja").read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def no_think_env(monkeypatch):
    monkeypatch.delenv("LREACT_THINK", raising=False)


def body(route, i=-1):
    return json.loads(route.calls[i].request.content)


# -- messages -------------------------------------------------------------------------------------

def test_reasoning_is_a_field_of_its_own():
    m = AssistantMessage("It's 12°C.", [], "I know this.")
    assert (m.text, m.reasoning) == ("It's 12°C.", "I know this.")
    assert AssistantMessage().reasoning == ""
    with pytest.raises(TypeError, match="reasoning"):
        AssistantMessage("x", [], None)


def test_wire_converters_carry_it_in_each_engines_field():
    turn = AssistantMessage("", [ToolCall("c1", "get_weather", '{"city": "Berlin"}')], THOUGHT1)
    assert messages_to_wire([turn])[0]["thinking"] == THOUGHT1                    # Ollama
    assert messages_to_wire([turn], reasoning_field="reasoning")[0]["reasoning"] == THOUGHT1
    assert messages_to_openai([turn])[0]["reasoning_content"] == THOUGHT1          # llama-server
    assert "thinking" not in messages_to_wire([AssistantMessage("hi")])[0]
    with pytest.raises(ValueError, match="reasoning_field"):
        messages_to_wire([turn], reasoning_field="thoughts")
    for field in ("thinking", "reasoning_content", "reasoning"):
        back = message_from_wire({"role": "assistant", "content": "a", field: "r"})
        assert back == AssistantMessage("a", [], "r")


# -- Ollama ---------------------------------------------------------------------------------------

def ollama(model="qwen3:8b", **kw):
    return OllamaLLM(model, host=HOST, timeout=30, **{**OPTIONS, **kw})


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_ollama_sends_think_and_reads_message_thinking(router, monkeypatch, how):
    fx, route = replay_recording(router, "chat_thinking_tool_call")
    if how == "environment":
        monkeypatch.setenv("LREACT_THINK", "on")
        llm = ollama()
    else:
        llm = ollama(think="on")
    reply = llm([SYSTEM, BERLIN], TOOLS)
    assert body(route) == fx["request"]["json"]
    assert reply.reasoning == THOUGHT1 and reply.text == ""
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_q3b7e1a0", "get_weather", '{"city": "Berlin"}')]
    assert llm.last == {"prompt_tokens": 281, "completion_tokens": 61, "finish": "stop",
                        "max_tokens": 512, "cut": False}


def test_ollama_auto_sends_no_think_and_off_sends_false(router, monkeypatch):
    _, route = replay_recording(router, "chat_thinking_tool_call")
    ollama()([SYSTEM, BERLIN], TOOLS)
    assert "think" not in body(route)
    monkeypatch.setenv("LREACT_THINK", "off")
    ollama()([SYSTEM, BERLIN], TOOLS)
    assert body(route)["think"] is False
    monkeypatch.setenv("LREACT_THINK", "maybe")
    with pytest.raises(ValueError, match="LREACT_THINK='maybe'.*on, off or auto"):
        ollama()


def test_ollama_sends_the_episodes_thinking_back(router):
    fx, route = replay_recording(router, "chat_thinking_episode")
    history = [SYSTEM, BERLIN,
               AssistantMessage("", [ToolCall("call_q3b7e1a0", "get_weather", '{"city": "Berlin"}')],
                                THOUGHT1),
               ToolResultMessage("call_q3b7e1a0", "12°C, rainy")]
    reply = ollama(think=True)(history, TOOLS)
    assert body(route) == fx["request"]["json"]
    assert reply == AssistantMessage("It's 12°C and rainy in Berlin.", [], THOUGHT2)


def test_ollama_says_when_the_cap_cut_a_reply(router):
    fx, route = replay_recording(router, "chat_thinking_cut")
    llm = ollama(think="on", num_predict=64)
    reply = llm([SYSTEM, BERLIN], TOOLS)
    assert body(route) == fx["request"]["json"]
    assert reply.text == "" and reply.reasoning.endswith("Let me")
    assert llm.last["cut"] is True and llm.last["max_tokens"] == 64


def test_ollama_on_a_model_that_cannot_think_says_what_to_do(router):
    replay_recording(router, "chat_think_unsupported")
    with pytest.raises(OllamaError, match="does not think.*Unset LREACT_THINK"):
        ollama("qwen2.5:7b", think="on")([SYSTEM, BERLIN], TOOLS)


def test_ollama_thinking_left_in_the_content_is_split_off(router):
    fx = load_recording("chat_text_answer")
    route = router.route(method="POST", url=HOST + "/api/chat")
    import httpx
    answer = dict(fx["response"]["json"])
    answer["message"] = {"role": "assistant", "content": "<think>\nEasy.\n</think>\n\nHello."}
    route.return_value = httpx.Response(200, json=answer)
    assert ollama("qwen2.5:7b")([BERLIN]) == AssistantMessage("Hello.", [], "Easy.")


# -- OpenAI-compatible engines -----------------------------------------------------------------------

@pytest.fixture
def engine(monkeypatch):
    for var in ("LREACT_MODEL", "LREACT_BASE_URL", "LREACT_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return Engine()


def openai_llm(engine, model, base, **kw):
    return OpenAICompatLLM(model, base_url=base, timeout=30, http_client=engine.client(),
                           temperature=0, top_p=0.9, seed=42, **kw)


def test_llama_server_reasoning_content_and_enable_thinking(engine):
    fx = replay(engine, "llama_server_reasoning_content")
    llm = openai_llm(engine, "Qwen3-1.7B-Q4_K_M.gguf", "http://127.0.0.1:8080/v1", think="on")
    reply = llm([SYSTEM, BERLIN], TOOLS)
    assert sent(engine) == fx["request"]["json"]
    assert reply.reasoning == THOUGHT1 and reply.text == ""
    assert reply.tool_calls[0].arguments == '{"city":"Berlin"}'
    assert llm.last == {"prompt_tokens": 283, "completion_tokens": 58, "finish": "tool_calls",
                        "max_tokens": 512, "cut": False}


def test_thinking_left_in_the_text_is_split_off(engine):
    fx = replay(engine, "llama_server_reasoning_inline")
    reply = openai_llm(engine, "Qwen3-1.7B-Q4_K_M.gguf", "http://127.0.0.1:8080/v1")([SYSTEM, BERLIN])
    assert sent(engine) == fx["request"]["json"]
    assert reply == AssistantMessage("It's 12°C and rainy in Berlin.", [], THOUGHT2)


def test_vllm_reasoning_goes_back_in_the_field_vllm_used(engine):
    first = replay(engine, "vllm_reasoning_call")
    second = load_recording_openai("vllm_reasoning_answer")
    engine.routes[("POST", "http://127.0.0.1:8000/v1/chat/completions")] = [
        (200, first["response"]["json"]), (200, second["response"]["json"])]
    llm = openai_llm(engine, "Qwen/Qwen3.5-2B", "http://127.0.0.1:8000/v1")
    history = [SYSTEM, BERLIN]
    turn = llm(history, TOOLS)
    assert sent(engine) == first["request"]["json"]
    assert turn.reasoning == THOUGHT1 and turn.text == "" and llm.reasoning_field == "reasoning"
    history += [turn, ToolResultMessage(turn.tool_calls[0].id, "12°C, rainy")]
    answer = llm(history, TOOLS)
    assert sent(engine) == second["request"]["json"]
    assert answer == AssistantMessage("It's 12°C and rainy in Berlin.", [], THOUGHT2)


def load_recording_openai(name):
    path = pathlib.Path(__file__).parent / "fixtures" / "openai" / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8"))


# -- one cap --------------------------------------------------------------------------------------

def test_every_backend_has_the_same_default_cap():
    assert models.DEFAULT_MAX_TOKENS == embedded.DEFAULT_MAX_TOKENS == 512
    assert models.reply_run(10, 512, "length", 512)["cut"] is True


# -- the embedded engine's template -------------------------------------------------------------------

def test_a_template_with_enable_thinking_gets_it_and_earlier_thinking():
    template = ChatTemplate(TEMPLATE, eos_token="<|im_end|>", bos_token="")
    assert template.own and template.thinking_switch
    call = ToolCall("c1", "get_weather", '{"city": "Berlin"}')
    history = [SYSTEM, UserMessage("Hi"), AssistantMessage("Hello!", [], "OLD THOUGHT"),
               BERLIN, AssistantMessage("", [call], "CURRENT THOUGHT"),
               ToolResultMessage("c1", "12°C, rainy")]
    default = template.render(history, TOOLS)
    assert default.endswith("<|im_start|>assistant\n<think>\n")              # template's default
    assert template.render(history, TOOLS, thinking=False).endswith("<think>\n\n</think>\n\n")
    assert "CURRENT THOUGHT" in default and "OLD THOUGHT" not in default     # the template's rule
    assert "<function=get_weather>\n<parameter=city>\nBerlin\n</parameter>" in default
    plain = ChatTemplate("{% for m in messages %}{{ m.content }}{% endfor %}{{ tools }}")
    assert not plain.thinking_switch


GBNF = r'''root ::= [a-z ]{1,40} "\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\n" city "\n</parameter>\n</function>\n</tool_call>"
city ::= "Berlin" | "Paris"'''


@real_model
def test_real_engine_prefilled_thinking_and_an_xml_call(monkeypatch):
    from llama_cpp import LlamaGrammar

    llm = embedded.EmbeddedLLM(MODEL, temperature=0, seed=1, max_tokens=96, think="on",
                               chat_template=TEMPLATE)
    original = llm._generate

    def forced(m, prompt, *, stop, grammar=None, **kw):   # the format forced, the words the model's
        forced.prompt = prompt
        return original(m, prompt, stop=stop, **kw,
                        grammar=LlamaGrammar.from_string(GBNF, verbose=False))

    monkeypatch.setattr(llm, "_generate", forced)
    reply = llm([SYSTEM, BERLIN], TOOLS)
    assert forced.prompt.endswith("<|im_start|>assistant\n<think>\n")
    assert reply.reasoning and "</think>" not in reply.reasoning and reply.text == ""
    assert [(c.name, json.loads(c.arguments)["city"] in ("Berlin", "Paris"))
            for c in reply.tool_calls] == [("get_weather", True)]
    assert llm.last["cut"] is False and llm.last["max_tokens"] <= 96


def test_the_lens_marks_thinking_tokens_apart():
    from lreact.views.lens import lens_html, thinking_tokens
    tokens = [{"token": t, "logprob": -0.1, "rank": 1, "top": [(t, -0.1)]}
              for t in ["<think>", "\n", "I", " need", "</think>", "\n\n", "It", "'s"]]
    reply = {"model": {"n_vocab": 100}, "tokens": tokens}
    assert thinking_tokens(reply) == {0, 1, 2, 3, 4}
    assert thinking_tokens({"prefill": "<think>\n", "tokens": tokens[2:]}) == {0, 1, 2}
    html = lens_html(reply)
    assert html.count("lens-tok lens-think") == 5 and "5 thinking tokens" in html
    assert "thinking tokens" not in lens_html({"model": {"n_vocab": 100}, "tokens": tokens[6:]})


def test_thinking_is_counted_in_the_budget_by_the_templates_rule():
    from lreact.traces import thinking_tokens
    history = [SYSTEM, UserMessage("Hi"), AssistantMessage("Hello.", [], "x" * 40), BERLIN,
               AssistantMessage("", [ToolCall("c", "get_weather", "{}")], "y" * 80)]
    assert thinking_tokens(history) == (20, 10)


def test_check_setup_names_the_qwen_models_per_backend():
    from lreact.engines.setup_report import models_line
    for backend in ("ollama", "openai", "embedded"):
        line = models_line(backend)
        assert all(x in line for x in ("Qwen2.5", "Qwen3", "Qwen3.5", "LREACT_THINK", "verified"))
    assert "LREACT_GGUF" in models_line("embedded") and "LREACT_MODEL" in models_line("ollama")
