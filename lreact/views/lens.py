"""A per-token probability lens over one reply (lecture Part I, "Next-token sampling: greedy or
random", applied to a whole tool call; Part III, "Native tool calling", for the format).

``read_reply`` generates one reply token by token on the embedded model (llama.cpp in this
process, ``lreact.views.student_decode.ModelStream``) and keeps, for every generated token, its
probability, its rank among all tokens of the vocabulary, and the most probable alternatives.
``lens_html`` colours each token by its probability (hover a token for the details);
``probability_lens()`` is the lecture's cell: live on the embedded model, otherwise the reply
recorded from SmolLM2-135M (``RECORDED``, a ``lreact.views.recordings`` recording: with the model
file's digest, the engine version and the chat template's digest; ``lreact.views.drift`` checks that
it still replays), so the notebook runs without a model.  The reply starts after a given
``<tool_call>`` line (the prefill), so even a small model writes a call, and its mistakes show
where it went wrong.
"""
from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from ..replies import original, parse_reply
from ..engines.models import ModelError
from .lens_reading import (  # noqa: F401 - the lens's
    LENS_MESSAGES,
    PREFILL,
    SETTINGS,
    configured_engine_reply,
    file_digest,
    read_reply,  # inputs, re-exported
)
from .recordings import lens_view, load
from .student_decode import full_logits_model

RECORDED = Path(__file__).resolve().parent / "recorded" / "lens-smollm2-tool-call.json"
def load_recorded(path=RECORDED) -> dict:
    """The recorded reply (a ``lreact.views.recordings`` recording, in ``read_reply``'s shape); a plain
    error when the file is missing."""

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No recorded reply at {path}: run the lens with the embedded "
                                "model, or reinstall lreact (its recorded/ folder is missing).")
    return lens_view(load(path))


def _colour(p: float) -> str:
    """Red (unsure) through yellow to green (sure)."""
    return f"hsl({round(120 * p)}, 75%, 78%)"


def _shown(token: str) -> str:
    return html.escape(token.replace("\n", "↵\n").replace("\t", "⇥"))


def thinking_tokens(reply: dict) -> set:
    """The indices of the reply's tokens that belong to a thinking span (lecture Part II, "Native
    reasoning models"): from a ``<think>`` (or the start, when the prompt ended with one) to the
    ``</think>`` that closes it, both tags included."""
    inside = reply.get("prefill", "").rstrip().endswith("<think>")
    text, found = "", set()
    for k, row in enumerate(reply["tokens"]):
        before = text
        text += row["token"]
        opened = not inside and "<think>" in text[max(0, len(before) - 7):]
        if inside or opened:
            found.add(k)
            inside = "</think>" not in text[text.rfind("<think>") + 1 if "<think>" in text else 0:]
    return found


def lens_html(reply: dict, *, lowest: int = 3) -> str:
    """The reply as coloured tokens (hover: probability, rank, alternatives), a legend, and the
    ``lowest`` least probable tokens.  Every token text is escaped."""
    n_vocab = reply["model"].get("n_vocab")
    if n_vocab:
        among = f"of {n_vocab}"
    else:           # a server's reply: ranks only within the top it sent (lreact.views.lens_reading)
        sent = max((len(row["top"]) for row in reply["tokens"]), default=0)
        among = f"among the top {sent} the server sent"
    spans = []
    thinking = thinking_tokens(reply)
    for k, row in enumerate(reply["tokens"]):
        p = float(np.exp(row["logprob"]))
        think = " lens-think" if k in thinking else ""
        alts = "".join(
            f"<tr><td>{'▶' if t == row['token'] else ''}</td><td><code>{_shown(t) or '∅'}"
            f"</code></td><td>{np.exp(lp):.3f}</td></tr>" for t, lp in row["top"])
        spans.append(
            f"<span class='lens-tok{think}' style='background:{_colour(p)}'>{_shown(row['token'])}"
            f"<span class='lens-tip'>token {k + 1}{' (thinking)' if think else ''}: p = {p:.3f}, "
            f"rank {row['rank']} "
            f"{html.escape(among)}<table>{alts}</table></span></span>")
    order = sorted(range(len(reply["tokens"])), key=lambda k: reply["tokens"][k]["logprob"])
    unsure = ", ".join(
        f"token {k + 1} <code>{_shown(reply['tokens'][k]['token'])}</code> "
        f"(p = {np.exp(reply['tokens'][k]['logprob']):.2f}, rank {reply['tokens'][k]['rank']})"
        for k in order[:lowest])
    legend = "".join(f"<span class='lens-tok' style='background:{_colour(p)}'>p = {p:g}</span> "
                     for p in (0.05, 0.25, 0.5, 0.75, 1))
    style = ("<style>.lens-box{position:relative;padding-bottom:170px}.lens-reply{"
             "font-family:monospace;white-space:pre-wrap;line-height:1.9;font-size:13px}"
             ".lens-tok{border-radius:3px;padding:1px 0;margin-right:1px;cursor:help}"
             ".lens-tok .lens-tip{display:none;position:absolute;left:0;bottom:0;height:156px;"
             "min-width:320px;z-index:10;background:#fff;border:1px solid #888;padding:4px;"
             "white-space:nowrap;font-size:12px;font-family:monospace}"
             ".lens-think{border-bottom:2px dotted #6a3d9a;font-style:italic}"
             ".lens-tok:hover{outline:2px solid #333}.lens-tok:hover .lens-tip{display:block}"
             ".lens-tip td{padding:0 6px}.lens-help{position:absolute;left:0;bottom:0;"
             "color:#888;height:136px;padding:4px}</style>")
    given = html.escape(reply.get("prefill", "").replace("\n", "↵\n"))
    marked = (f"<br><span class='lens-think'>dotted, italic</span>: {len(thinking)} thinking "
              "tokens (the span between &lt;think&gt; and &lt;/think&gt;: reasoning, not answer)"
              if thinking else "")
    return (f"{style}<div class='lens-box'><div class='lens-reply'><span style='color:#888'>"
            f"{given}</span>{''.join(spans)}</div><div style='margin-top:6px'>colour: {legend}"
            f"<br>least sure: {unsure}{marked}</div><div class='lens-help'>hover over a token: its "
            "probability, its rank and the likeliest tokens at that step appear here</div>"
            "</div>")


def least_sure(reply: dict) -> tuple:
    """(index, token, probability, part) of the least probable token of the reply; ``part`` is
    where it sits in the call: "tool name", "arguments" (inside the arguments' braces) or
    "structure" (braces, quotes and key names outside them)."""
    import re

    prefill = reply.get("prefill", "")
    text = prefill + reply["text"]
    k = min(range(len(reply["tokens"])), key=lambda i: reply["tokens"][i]["logprob"])
    start = len(prefill) + sum(len(row["token"]) for row in reply["tokens"][:k])
    token = reply["tokens"][k]["token"]
    name = re.search(r'"name"\s*:\s*"([^"]*)', text)
    arguments = re.search(r'"arguments"\s*:\s*\{', text)
    part = "structure"
    if set(token) <= set('{}[]:,"\' \n'):
        pass                                  # punctuation is layout wherever it stands
    elif name and name.start(1) <= start < max(name.end(1), name.start(1) + 1):
        part = "tool name"
    elif arguments and start >= arguments.end() and "</tool_call>" not in text[arguments.end():start]:
        part = "arguments"
    return k, token, float(np.exp(reply["tokens"][k]["logprob"])), part


def probability_lens(messages=LENS_MESSAGES, tools=None, *, live=None, prediction=None,
                     **settings):
    """The lecture's lens cell: one reply coloured token by token, from the embedded model (every
    logit), else from the configured Ollama or OpenAI-compatible server (the top log-probabilities
    it sends, ``lreact.views.lens_reading``); without a model (or with ``live=False``) the recorded
    reply, with the reason.  ``prediction`` (the student's guess of where the model is least
    sure) is printed beside where it was (``lreact.views.predict``).  Returns an
    ``ipywidgets.HTML``."""
    import ipywidgets as w

    from . import predict, waiting

    if live is not False:
        waiting.announce("lens-widget")
    settings = {**SETTINGS, **settings}
    llm = full_logits_model(echo=False, download=False) if live is not False else None
    reply, why = None, "live=False"
    if llm is not None:
        try:
            reply = read_reply(llm, messages, tools, **settings)
            where = f"live: {reply['model']['file']} in this kernel"
        except ModelError as e:
            why = f"the embedded model could not answer: {e}"
    elif live is not False:
        reply, why = configured_engine_reply(messages, tools, prefill=PREFILL, **settings)
        if reply is not None:
            where = (f"live: {reply['model']['file']} on {reply['model']['engine']} (a server "
                     f"sends only the top {settings['top']} tokens of each step)")
    if reply is None:
        reply = load_recorded()
        where = (f"recorded: {reply['model']['file']} (sha256 {reply['model']['sha256'][:12]}…,"
                 f" {reply['model']['engine']}); no live reply: {why}")
    call = original(parse_reply)(reply.get("prefill", "") + reply["text"], new_id=lambda: "call_1")
    verdict = (f"a valid call: {call.tool_calls[0].name}({call.tool_calls[0].arguments})"
               if call.tool_calls else "no valid tool call (a format error)")
    s = reply["settings"]
    head = (f"<div><b>{html.escape(where)}</b>; T = {s['temperature']}, seed {s['seed']}, "
            f"{len(reply['tokens'])} tokens; the reply is {html.escape(verdict)}</div>")
    k, token, p, part = least_sure(reply)
    predict.show(prediction, f"least sure at token {k + 1}, {token!r} (p = {p:.3f}), in the "
                 f"{part}", "a small model is surest of the layout it was trained on and least "
                 "sure where the content is chosen; a grammar (Part I) can fix the layout, not "
                 "the choice.")
    box = w.HTML(head + lens_html(reply))
    box.add_class("lreact-lens")
    return box
