"""``python -m autograder class-server`` (issue 30): the roster read with the care of an LMS file,
one key per student in private files, llama-server started with them, and a bounded load test on
loopback with the real llama-server and SmolLM2.

The load test (``test_a_class_on_one_server``): ``STUDENTS`` simulated students, each running the
first lab's ``run_agent`` (its solution) on two questions at once with their own key, and one
intruder with a wrong key, against ``SLOTS`` slots.  It reports the latency of every model call
and every run (p50/p95), the errors and the refused keys (printed, and written to
``artifacts/class-server/load-test.json``); it asserts only behaviour:

- every run ends (each request has a timeout, the whole test a deadline);
- no student's reply reaches another: every answer a student received carries the prompt size of
  that student's own request (``usage.prompt_tokens`` equals the tokens of the request rendered
  and tokenized by the server: ``/apply-template``, ``/tokenize``; the students' questions differ
  in length) and no answer arrived twice (completion ids unique);
- a wrong key never reaches the model: refused with HTTP 401 in plain words, and the server's
  token counters (``/metrics``) do not move while only wrong keys knock;
- no key appears in what the command prints or in the server's log.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import socket
import stat
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from llama_server_support import MODEL, lab1_solution, needs_llama_server, template

from autograder.__main__ import main
from autograder.instructor.class_server import (
    ClassServer,
    ClassServerError,
    KeyStore,
    Settings,
    free_port,
    read_roster,
)
from lreact import ModelError, OpenAICompatLLM, SystemMessage, check_setup
from lreact.tools import TOOLS

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts" / "class-server"

CANVAS = """Student,ID,SIS User ID,SIS Login ID,Section,Lab 1 (123)
    Points Possible,,,,,10
"Smith, Dana",101,S101,dsmith,A,
"=HYPERLINK(""http://x"")",102,S102,mallory,A,
"Lee, Kim",103,S103,klee,B,
"""


def write(path: Path, text: str, encoding="utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def fake_gguf(tmp_path) -> Path:
    return write(tmp_path / "model.gguf", "GGUF" + "\0" * 60)


# -- the roster ----------------------------------------------------------------------------------

def test_a_canvas_gradebook_export_is_a_roster(tmp_path):
    roster = read_roster(write(tmp_path / "canvas.csv", CANVAS))
    assert roster.primary == "id" and roster.skipped == 1            # "Points Possible"
    assert [s["id"] for s in roster.students] == ["101", "102", "103"]
    assert [h for h, _ in roster.headers] == ["Student", "ID", "SIS User ID", "SIS Login ID",
                                               "Section"]                # not "Lab 1 (123)"


def test_a_moodle_export_saved_with_semicolons(tmp_path):
    text = ("First name;Last name;ID number;Email address\nAda;Lovelace;A-1;ada@uni.example\n"
            "\n;;;\nAlan;Turing;A-2;alan@uni.example\n")
    roster = read_roster(write(tmp_path / "moodle.csv", "\ufeff" + text))
    assert roster.primary == "idnumber" and roster.skipped == 2
    assert [(s["idnumber"], s["email"]) for s in roster.students] == [
        ("A-1", "ada@uni.example"), ("A-2", "alan@uni.example")]


@pytest.mark.parametrize("text,said", [
    ("Name,Grade\nDana,3\n", "needs a header with a column that names each student: one of id, "
                             "sis_user_id, sis_login_id, username, idnumber, email, submission "),
    ("ID,Name\n101,Dana\n101,Kim\n", "lines 2 and 3 have the same id 101: a key must belong to "
                                     "one student"),
    ("ID,Email\n101,d@x\n102,d@x\n", "lines 2 and 3 have the same email d@x"),
    ("ID,Name\n101,Dana\n,Kim\n", "line 3: no id; every student needs one"),
    ("ID,Name\n", "names no student"),
    ("", "found: an empty file"),
    ("ID,Name\n\x1b[2K101\0,x\n", "holds NUL bytes"),
    ("ID,id\n1,2\n", "more than one column is read as id"),
])
def test_a_bad_roster_says_what_to_fix(tmp_path, text, said):
    with pytest.raises(ClassServerError) as e:
        read_roster(write(tmp_path / "roster.csv", text))
    assert said in str(e.value), str(e.value)
    assert str(e.value).startswith("class-server: ")


def test_a_roster_that_is_not_utf8_or_not_a_file(tmp_path):
    with pytest.raises(ClassServerError, match="is not UTF-8 text; save it as CSV"):
        read_roster(write(tmp_path / "latin1.csv", "ID,Name\n1,Jos\xe9\n", "latin-1"))
    with pytest.raises(ClassServerError, match="no roster file"):
        read_roster(tmp_path / "missing.csv")
    with pytest.raises(ClassServerError, match="is not a file"):
        read_roster(tmp_path)


def test_a_name_that_controls_the_terminal_is_shown_escaped(tmp_path):
    with pytest.raises(ClassServerError) as e:
        read_roster(write(tmp_path / "r.csv", "ID,Name\n\x1b[2Kx,a\n\x1b[2Kx,b\n"))
    assert "\x1b" not in str(e.value) and "\\x1b[2Kx" in str(e.value)


# -- the keys ------------------------------------------------------------------------------------

def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def handout(store: KeyStore) -> dict:
    rows = list(csv.DictReader(io.StringIO(store.handout.read_text(encoding="utf-8"))))
    return {r["ID"]: r for r in rows}


def test_keys_are_private_inert_and_one_per_student(tmp_path):
    store = KeyStore(tmp_path / "keys")
    changes = store.update(read_roster(write(tmp_path / "canvas.csv", CANVAS)))
    assert (changes.kept, changes.new, changes.replaced, changes.revoked) == (0, 3, 0, [])
    assert mode(store.folder) == 0o700
    assert {p.name: mode(p) for p in store.folder.iterdir()} == {
        "keys.json": 0o600, "keys.csv": 0o600, "api-keys.txt": 0o600,
        "instructor-key.txt": 0o600}
    rows = handout(store)
    keys = [r["API key"] for r in rows.values()]
    assert len(set(keys)) == 3 and all(re.fullmatch(r"lr-[A-Za-z0-9_-]{32}", k) for k in keys)
    assert rows["102"]["Student"] == "'=HYPERLINK(\"http://x\")"      # never a formula
    served = store.key_file.read_bytes()
    assert b"\r" not in served and served.decode().split("\n") == [*keys, store.instructor_key(),
                                                                   ""]


def test_a_second_start_keeps_every_key_and_revokes_the_gone(tmp_path):
    store = KeyStore(tmp_path / "keys")
    store.update(read_roster(write(tmp_path / "canvas.csv", CANVAS)))
    before, instructor = handout(store), store.instructor_key()
    smaller = CANVAS.replace('"Lee, Kim",103,S103,klee,B,\n', "") + "\"New, Pat\",104,S104,pn,B,\n"
    changes = store.update(read_roster(write(tmp_path / "canvas.csv", smaller)),
                           new_keys_for=["101"])
    after = handout(store)
    assert (changes.kept, changes.new, changes.replaced, changes.revoked) == (1, 1, 1, ["103"])
    assert after["102"]["API key"] == before["102"]["API key"]          # kept
    assert after["101"]["API key"] != before["101"]["API key"]          # --new-key
    assert "103" not in after and before["103"]["API key"] not in store.key_file.read_text()
    assert store.instructor_key() == instructor


def test_the_key_folder_refuses_what_would_mix_students_up(tmp_path):
    store = KeyStore(tmp_path / "keys")
    store.update(read_roster(write(tmp_path / "canvas.csv", CANVAS)))
    with pytest.raises(ClassServerError, match="no student with that id"):
        store.update(read_roster(tmp_path / "canvas.csv"), new_keys_for=["999"])
    moodle = write(tmp_path / "moodle.csv", "ID number,Email address\nA-1,a@x\n")
    with pytest.raises(ClassServerError, match="names students by id, this roster by idnumber"):
        store.update(read_roster(moodle))
    store.state.write_text("{not json")
    with pytest.raises(ClassServerError, match="is not a key file this command wrote"):
        store.update(read_roster(tmp_path / "canvas.csv"))


# -- the command's input -------------------------------------------------------------------------

def test_bad_settings_say_what_to_change(tmp_path):
    roster = write(tmp_path / "canvas.csv", CANVAS)
    with pytest.raises(ClassServerError, match="--model .*no such file"):
        ClassServer(roster, tmp_path / "nope.gguf")
    with pytest.raises(ClassServerError, match="is not a GGUF model file"):
        ClassServer(roster, roster)
    model = fake_gguf(tmp_path)
    for settings, said in ((Settings(slots=0), "--slots 0: must be a whole number from 1"),
                           (Settings(ctx=100), "--ctx 100: must be a whole number from 256"),
                           (Settings(ctx=512, max_tokens=1024), "more than a slot's context")):
        with pytest.raises(ClassServerError, match=said):
            ClassServer(roster, model, keys_dir=tmp_path / "k", settings=settings)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        server = ClassServer(roster, model, keys_dir=tmp_path / "k", settings=Settings(
            host="127.0.0.1", port=taken.getsockname()[1]))
        with pytest.raises(ClassServerError, match="is in use .* choose another with --port"):
            server.start()
    assert not (tmp_path / "k").exists()           # nothing written for a server not started


def test_the_command_line_reports_bad_input_without_a_traceback(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["class-server", str(tmp_path / "none.csv"), "--model", str(fake_gguf(tmp_path))])
    assert str(e.value).startswith("class-server: no roster file")
    with pytest.raises(SystemExit):
        main(["class-server", str(tmp_path / "none.csv")])            # --model is required
    assert "--model" in capsys.readouterr().err


# -- on the real llama-server --------------------------------------------------------------------

def roster_of(path: Path, n: int) -> Path:
    lines = ["Student,ID,SIS Login ID"] + [f"Student {i},{1000 + i},s{i}" for i in range(n)]
    return write(path, "\n".join(lines) + "\n")


@pytest.mark.slow
@needs_llama_server
def test_the_command_serves_checks_and_stops_without_a_hang(tmp_path):
    """``python -m autograder class-server`` as an instructor runs it: what it prints (no key),
    check_setup() with a student's key, a wrong one, and Ctrl-C with a request in flight: the
    command ends within its grace period and the request ends in a plain error."""
    port, keys = free_port(), tmp_path / "keys"
    command = [sys.executable, "-m", "autograder", "class-server",
               str(roster_of(tmp_path / "roster.csv", 3)), "--model", str(MODEL),
               "--host", "127.0.0.1", "--port", str(port), "--keys", str(keys),
               "--slots", "2", "--ctx", "2048", "--max-tokens", "64"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LLAMA_ARG_API_KEY": "lr-from-the-environment",
           "LLAMA_API_KEY": "lr-from-the-environment-2"}      # llama-server reads both
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env, text=True, cwd=tmp_path)
    printed = []
    try:
        deadline = time.monotonic() + 180
        reader = threading.Thread(target=lambda: printed.extend(proc.stdout), daemon=True)
        reader.start()
        while not any("Ctrl-C stops the server" in line for line in printed):
            assert proc.poll() is None, "".join(printed)
            assert time.monotonic() < deadline, "".join(printed)
            time.sleep(0.2)
        text = "".join(printed)
        base = f"http://127.0.0.1:{port}/v1"
        assert f"LREACT_BASE_URL={base} LREACT_API_KEY=<their key>" in text, text
        assert "3 students (0 kept, 3 new, 0 replaced)" in text, text
        assert "2 slots" in text and "2048 tokens of context each" in text, text
        key = handout(KeyStore(keys))["1001"]["API key"]
        env_keys = {"LREACT_BACKEND": "openai", "LREACT_BASE_URL": base}

        with pytest.MonkeyPatch.context() as mp:
            for k, v in env_keys.items():
                mp.setenv(k, v)
            mp.setenv("LREACT_API_KEY", key)
            good = check_setup(timeout=120)
            mp.setenv("LREACT_API_KEY", "lr-from-the-environment")   # not passed on
            wrong = check_setup(timeout=120)
            mp.setenv("LREACT_API_KEY", "lr-from-the-environment-2")
            wrong_too = check_setup(timeout=120)
        assert good.ok and "✓ It accepts the API key in LREACT_API_KEY." in str(good), str(good)
        assert not wrong and "refused this key" in str(wrong), str(wrong)
        assert not wrong_too and "refused this key" in str(wrong_too), str(wrong_too)

        outcome = {}

        def long_request():
            llm = OpenAICompatLLM(base_url=base, api_key=key, timeout=120)
            try:
                outcome["text"] = llm.complete(", ".join(map(str, range(1, 200))),
                                               max_tokens=1500)
            except ModelError as e:
                outcome["error"] = e

        worker = threading.Thread(target=long_request, daemon=True)
        worker.start()
        time.sleep(1.5)
        assert worker.is_alive(), outcome
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        ended = time.monotonic() - start
        worker.join(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = "".join(printed)
    assert proc.returncode == 0 and "class-server: stopped" in text, text
    assert not worker.is_alive() and "stopped while answering" in str(outcome.get("error")), outcome
    everything = text + (keys / "llama-server.log").read_text(errors="replace")
    secrets = keys.joinpath("api-keys.txt").read_text().split()
    assert len(secrets) == 4 and not any(k in everything for k in secrets)
    print(f"\nclass-server stopped {ended:.1f} s after Ctrl-C, a request in flight")


# -- the load test -------------------------------------------------------------------------------

STUDENTS = 8           # simulated students, each with two runs at once
SLOTS = 4
CTX = 2048             # tokens per slot
MAX_STEPS = 3
MAX_TOKENS = 64
REQUEST_TIMEOUT = 300.0     # seconds per model call
DEADLINE = 1200.0           # seconds for every run to end: a bound, never asserted as a speed
QUESTIONS = ["What's the weather in Berlin?", "What is (17 + 25) * 3?",
             "Is it warmer in Madrid or in Oslo right now?", "Hello! How are you?"]


class Recorder:
    """The HTTP transport under one student's openai client: every exchange with its body, its
    answer and its wall time."""

    def __init__(self, student):
        import httpx2

        self.httpx2, self.student = httpx2, student
        self.inner = httpx2.HTTPTransport()
        self.exchanges = []

    def client(self):
        recorder = self

        class Transport(self.httpx2.BaseTransport):
            def handle_request(self, request):
                start = time.monotonic()
                response = recorder.inner.handle_request(request)
                body = response.read()
                seconds = time.monotonic() - start
                try:
                    sent = json.loads(request.content or b"null")
                    got = json.loads(body)
                except ValueError:
                    sent = got = None
                recorder.exchanges.append({"path": request.url.path, "status":
                                           response.status_code, "sent": sent, "got": got,
                                           "seconds": seconds})
                headers = [(k, v) for k, v in response.headers.items()
                           if k.lower() not in ("content-length", "transfer-encoding",
                                                "content-encoding")]
                return recorder.httpx2.Response(response.status_code, headers=headers,
                                                content=body, request=request)

        return self.httpx2.Client(transport=Transport())


def metrics(local: str, key: str) -> dict:
    text = httpx.get(local + "/metrics", headers={"Authorization": f"Bearer {key}"},
                     timeout=30).text
    return {m[2]: float(m[3]) for m in re.finditer(r"^(llamacpp:(\w+)) ([0-9.e+-]+)$", text,
                                                     re.M)}


def prompt_tokens_of(local: str, key: str, sent: dict) -> int:
    """The tokens of a chat request as the server renders and tokenizes it."""
    auth = {"Authorization": f"Bearer {key}"}
    rendered = httpx.post(local + "/apply-template", headers=auth, timeout=60, json={
        k: sent[k] for k in ("messages", "tools") if k in sent}).json()["prompt"]
    return len(httpx.post(local + "/tokenize", headers=auth, timeout=60, json={
        "content": rendered, "add_special": False, "parse_special": True}).json()["tokens"])


def pct(values, q):
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 2) if values else None


@pytest.mark.slow
@needs_llama_server
def test_a_class_on_one_server(tmp_path):
    lab = lab1_solution()
    roster = roster_of(tmp_path / "roster.csv", STUDENTS)
    settings = Settings(slots=SLOTS, ctx=CTX, host="127.0.0.1", port=free_port(),
                        max_tokens=MAX_TOKENS,
                        chat_template_file=template("Qwen-Qwen2.5-7B-Instruct.jinja"))
    runs, intruder = [], {}
    with ClassServer(roster, MODEL, keys_dir=tmp_path / "keys", settings=settings) as cs:
        base, local = cs.server.base_url, cs.server.local
        summary = cs.summary()
        keys = {row["ID"]: row["API key"] for row in handout(cs.keys).values()}
        instructor = cs.keys.instructor_key()

        def student_run(i, q, question, recorder):
            # the question's length differs per student (the cross-talk check reads it)
            text = f"I am student number {i}{'!' * i}. {question}"
            llm = OpenAICompatLLM(base_url=base, api_key=keys[str(1000 + i)],
                                  timeout=REQUEST_TIMEOUT, http_client=recorder.client(),
                                  temperature=0.7, seed=100 * i + q, max_tokens=MAX_TOKENS)
            history = [SystemMessage(lab["SYSTEM_PROMPT"])]
            row = {"student": i, "question": q, "outcome": None}
            start = time.monotonic()
            try:
                answer = lab["run_agent"](text, llm, TOOLS, lab["REGISTRY"], history=history,
                                          max_steps=MAX_STEPS)
                row["outcome"] = ("step budget" if answer == "stopped: step budget exhausted"
                                  else "answered")
            except ModelError as e:
                row["outcome"], row["error"] = "ModelError", str(e)[:300]
            except Exception as e:   # noqa: BLE001 - reported: nothing else may escape
                row["outcome"], row["error"] = type(e).__name__, str(e)[:300]
            row["seconds"] = time.monotonic() - start
            lab["check_pairing"](history)
            runs.append(row)

        def intruder_run():
            llm = OpenAICompatLLM(base_url=base, api_key="lr-" + "x" * 32, timeout=60)
            start = time.monotonic()
            try:
                lab["run_agent"]("What's the weather in Berlin?", llm, TOOLS, lab["REGISTRY"],
                                 history=[SystemMessage(lab["SYSTEM_PROMPT"])])
            except ModelError as e:
                intruder["error"] = str(e)
            intruder["seconds"] = time.monotonic() - start

        recorders = {i: Recorder(i) for i in range(STUDENTS)}
        threads = [threading.Thread(target=student_run, daemon=True,
                                    args=(i, q, QUESTIONS[(i + q) % len(QUESTIONS)],
                                          recorders[i]))
                   for i in range(STUDENTS) for q in range(2)]
        threads.append(threading.Thread(target=intruder_run, daemon=True))
        start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=max(1.0, DEADLINE - (time.monotonic() - start)))
        wall = time.monotonic() - start
        assert not any(t.is_alive() for t in threads), f"runs still going after {DEADLINE:g} s"

        # no student's reply reached another
        exchanges = [(i, x) for i, r in recorders.items() for x in r.exchanges
                     if x["path"].endswith("/chat/completions") and x["status"] == 200]
        ids = [x["got"]["id"] for _, x in exchanges]
        assert len(ids) == len(set(ids)), "an answer arrived twice"
        for i, x in exchanges:
            assert f"I am student number {i}{'!' * i}." in json.dumps(x["sent"])
            assert x["got"]["usage"]["prompt_tokens"] == prompt_tokens_of(local, instructor,
                                                                          x["sent"]), (i, x)

        # a wrong key never reaches the model
        before = metrics(local, instructor)
        refused = []
        for wrong in ("lr-" + "y" * 32, None, keys["1000"][:-1], keys["1000"].upper(),
                      "# " + keys["1000"]):          # None: no Authorization header at all
            answer = httpx.post(base + "/chat/completions", timeout=60, json={
                "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8},
                headers={"Authorization": f"Bearer {wrong}"} if wrong else {})
            refused.append(answer.status_code)
        after = metrics(local, instructor)
        log = cs.server.log.read_text(errors="replace")
    assert refused == [401] * 5
    for counter in ("prompt_tokens_total", "tokens_predicted_total", "n_decode_total"):
        assert after[counter] == before[counter], (counter, before, after)
    assert "refused this key" in intruder.get("error", ""), intruder
    assert not any(k in summary + log for k in [*keys.values(), instructor])

    # every run ended; nothing but ModelError escaped; no student's own key was refused
    assert len(runs) == 2 * STUDENTS
    assert all(r["outcome"] in ("answered", "step budget", "ModelError") for r in runs), runs
    assert not any("refused this key" in r.get("error", "") for r in runs), runs

    calls = [x["seconds"] for _, x in exchanges]
    report = {
        "students": STUDENTS, "runs_at_once": 2 * STUDENTS, "slots": SLOTS,
        "ctx_per_slot": CTX, "max_tokens": MAX_TOKENS, "max_steps": MAX_STEPS,
        "model": Path(MODEL).name, "chat_template": "Qwen2.5 (--chat-template-file)",
        "runs": len(runs), "model_calls": len(calls),
        "tokens_generated": sum(x["got"]["usage"]["completion_tokens"] for _, x in exchanges),
        "prompt_tokens_min": min(x["got"]["usage"]["prompt_tokens"] for _, x in exchanges),
        "prompt_tokens_max": max(x["got"]["usage"]["prompt_tokens"] for _, x in exchanges),
        "call_seconds_p50": pct(calls, 0.5), "call_seconds_p95": pct(calls, 0.95),
        "call_seconds_sorted": [round(c, 1) for c in sorted(calls)],
        "run_seconds_p50": pct([r["seconds"] for r in runs], 0.5),
        "run_seconds_p95": pct([r["seconds"] for r in runs], 0.95),
        "wall_seconds": round(wall, 1),
        "errors": sum(r["outcome"] not in ("answered", "step budget") for r in runs),
        "error_messages": sorted({r["error"][:120] for r in runs if "error" in r}),
        "refused_keys": len(refused) + 1, "intruder_seconds": round(intruder["seconds"], 2),
        "outcomes": {o: sum(r["outcome"] == o for r in runs)
                     for o in sorted({r["outcome"] for r in runs})},
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "load-test.json").write_text(json.dumps(report, indent=1))
    print("\nclass-server load test: " + json.dumps(report))
    print(f"aggregate: {report['tokens_generated'] / wall:.1f} generated tokens/s over "
          f"{wall:.1f} s; median call {statistics.median(calls):.2f} s")


def test_the_server_never_outlives_the_command_that_started_it(tmp_path):
    """A closed terminal or kill -9 ends the command without its stop path: what it started
    gets SIGTERM from the kernel (outside review: llama-server kept serving after SIGHUP)."""
    import signal as signals
    starter = ("import subprocess, sys, time\n"
               "from autograder.instructor.class_server import _dies_with_parent\n"
               "p = subprocess.Popen(['sleep', '60'], start_new_session=True,"
               " preexec_fn=_dies_with_parent)\n"
               "print(p.pid, flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    child = int(proc.stdout.readline())
    os.kill(proc.pid, signals.SIGKILL)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{child}/stat") as f:            # a zombie of init's is gone too
            if f.read().split(") ")[1].startswith("Z"):
                break
        time.sleep(0.1)
    else:
        os.kill(child, signals.SIGKILL)
        raise AssertionError("the started process outlived the command")


def test_the_servers_environment_holds_no_key_of_its_own(monkeypatch):
    from autograder.instructor.class_server import server_env
    monkeypatch.setenv("LLAMA_API_KEY", "k1")
    monkeypatch.setenv("LLAMA_ARG_API_KEY", "k2")
    monkeypatch.setenv("LREACT_KEEP", "yes")
    env = server_env()
    assert "LLAMA_API_KEY" not in env and "LLAMA_ARG_API_KEY" not in env and env["LREACT_KEEP"] == "yes"
