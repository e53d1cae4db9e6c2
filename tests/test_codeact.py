"""run_python: one code action in a fresh, limited interpreter (Part III, "Specific tools vs a
code tool").  Hostile code costs only its own call: a clear result, this process unharmed."""
import os
import socket
import threading
from pathlib import Path

import pytest

from lreact.actions import codeact
from lreact.actions.codeact import run_python, weather_prelude
from lreact.tools import WEATHER

MODES = ["auto", "off"]      # bubblewrap where it works, and the limits-only fallback


def need_bwrap():
    """Skip without bubblewrap, except where a sandbox is required (CI: LREACT_REQUIRE_SANDBOX=1)."""
    if codeact.bwrap_works():
        return
    if os.environ.get("LREACT_REQUIRE_SANDBOX", "") not in ("", "0", "false", "no"):
        pytest.fail("bubblewrap is required (LREACT_REQUIRE_SANDBOX=1) but not usable: "
                    + codeact.isolation())
    pytest.skip("bubblewrap is not usable here: " + codeact.isolation())


def sandbox_uid_processes():
    """Processes still running under a code action's own user ids (60000-60999)."""
    left = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            uid = int(fields["Uid"].split()[0])
            if 60000 <= uid <= 60999 and not fields["State"].strip().startswith("Z"):
                left.append(int(entry.name))
    return left


@pytest.mark.parametrize("mode", MODES)
def test_output_exit_code_and_errors(mode):
    r = run_python("print('hello'); import sys; print('warn', file=sys.stderr)", timeout=10,
                   sandbox=mode)
    assert (r["stdout"], r["stderr"], r["exit_code"], r["timed_out"]) == \
        ("hello\n", "warn\n", 0, False)
    r = run_python("x = 1\n1 / 0", timeout=10, sandbox=mode)
    assert r["exit_code"] == 1 and "ZeroDivisionError" in r["stderr"]
    assert '<code action>", line 2' in r["stderr"] and "runner.py" not in r["stderr"]
    assert run_python("import sys; sys.exit(4)", timeout=10, sandbox=mode)["exit_code"] == 4
    assert run_python("def f(:", timeout=10, sandbox=mode)["exit_code"] == 1


def test_the_prelude_provides_get_weather_like_exercise_11():
    code = ("temps = {c: float(get_weather(c).split('°')[0]) for c in ['Berlin', 'Paris', 'Madrid']}\n"
            "print(max(temps, key=temps.get))")
    r = run_python(code, timeout=10, prelude=weather_prelude())
    warmest = max(["Berlin", "Paris", "Madrid"], key=lambda c: WEATHER[c]["temp_c"])
    assert r["exit_code"] == 0 and r["stdout"].strip() == warmest
    r = run_python("get_weather('Atlantis')", timeout=10, prelude=weather_prelude())
    assert r["exit_code"] == 1 and "unknown city" in r["stderr"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("code", ["while True: pass", "import time; time.sleep(60)"])
def test_an_endless_action_is_stopped_at_the_time_limit(mode, code):
    r = run_python(code, timeout=1, sandbox=mode)
    assert r["timed_out"] is True and r["exit_code"] is None
    assert not sandbox_uid_processes()


@pytest.mark.parametrize("mode", MODES)
def test_a_fork_bomb_hits_the_process_limit_and_leaves_nothing_behind(mode):
    r = run_python("import os\nwhile True:\n    os.fork()", timeout=3, sandbox=mode)
    assert r["timed_out"] or r["exit_code"] != 0
    assert "Resource temporarily unavailable" in r["stderr"] or r["timed_out"]
    assert not sandbox_uid_processes()
    assert run_python("print(2 + 2)", timeout=10, sandbox=mode)["stdout"] == "4\n"


@pytest.mark.parametrize("mode", MODES)
def test_a_detached_child_does_not_outlive_the_call(mode):
    if os.geteuid() != 0 and mode == "off":
        pytest.skip("without root the fallback cannot reach a detached child (NOT_PROTECTED)")
    code = "import os, time\nif os.fork() == 0:\n    os.setsid(); time.sleep(60)\nprint('parent')"
    r = run_python(code, timeout=5, sandbox=mode)
    assert r["stdout"] == "parent\n"
    assert not sandbox_uid_processes()


@pytest.mark.parametrize("mode", MODES)
def test_a_flood_of_output_is_truncated_to_the_stated_size(mode):
    r = run_python("print('x' * 10**7)\nimport sys\nsys.stderr.write('e' * 10**6)", timeout=20,
                   max_output=1000, sandbox=mode)
    assert r["truncated"] is True and r["exit_code"] == 0
    assert r["stdout"].startswith("x" * 1000) and r["stdout"].count("x") == 1000
    assert "output truncated" in r["stdout"] and "output truncated" in r["stderr"]
    assert len(r["stdout"]) < 1100 and len(r["stderr"]) < 1100


@pytest.mark.parametrize("mode", MODES)
def test_memory_is_limited(mode):
    r = run_python("block = bytearray(3 * 1024**3)", timeout=10, memory=256 * 1024**2, sandbox=mode)
    assert r["exit_code"] != 0 and "MemoryError" in r["stderr"]


@pytest.mark.parametrize("mode", MODES)
def test_the_scratch_folder_is_the_working_directory_and_is_private(mode):
    r = run_python("open('note.txt', 'w').write('hi')\nimport os\nprint(sorted(os.listdir('.')))",
                   timeout=10, sandbox=mode)
    assert "note.txt" in r["stdout"]
    r = run_python("import os\nprint(os.path.exists('note.txt'))", timeout=10, sandbox=mode)
    assert r["stdout"] == "False\n"       # a fresh folder for every call


def test_files_outside_the_scratch_folder_are_invisible_with_bubblewrap(tmp_path):
    need_bwrap()
    secret = tmp_path / "secret.txt"
    secret.write_text("the hidden tests")
    os.chmod(tmp_path, 0o755)
    os.chmod(secret, 0o644)
    repo_file = Path(codeact.__file__).resolve().parents[1] / "README.md"
    for path in (secret, repo_file, Path.home() / ".bash_history"):
        r = run_python(f"print(open({str(path)!r}).read())", timeout=10)
        assert r["exit_code"] == 1 and "No such file" in r["stderr"], path
    r = run_python("open('/usr/evil', 'w')", timeout=10)
    assert r["exit_code"] == 1 and ("Read-only" in r["stderr"] or "Permission" in r["stderr"])


def test_the_network_is_unreachable_with_bubblewrap():
    need_bwrap()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted = []

    def accept():
        try:
            accepted.append(server.accept())
        except OSError:        # closed at the end of the test, as expected
            pass
    t = threading.Thread(target=accept, daemon=True)
    server.settimeout(5)
    t.start()
    try:
        r = run_python(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                       "print('connected')", timeout=10)
        assert r["exit_code"] == 1 and "connected" not in r["stdout"]
        assert "ConnectionRefused" in r["stderr"] or "unreachable" in r["stderr"].lower()
    finally:
        server.close()
    assert not accepted


def test_isolation_is_stated_plainly():
    text = codeact.isolation()
    if codeact.bwrap_works():
        assert text.startswith("bubblewrap") and "no network" in text
    else:
        assert "WITHOUT a sandbox" in text and "CAN read" in text
    assert "CAN open network connections" in codeact.NOT_PROTECTED


def test_bad_arguments_are_explained():
    with pytest.raises(TypeError, match="code must be a str"):
        run_python(b"print(1)", timeout=1)
    with pytest.raises(TypeError):
        run_python("print(1)")          # the time limit is not optional
    with pytest.raises(ValueError, match="timeout"):
        run_python("print(1)", timeout=0)
    with pytest.raises(ValueError, match="sandbox"):
        run_python("print(1)", timeout=1, sandbox="maybe")


def test_require_raises_where_bubblewrap_is_unusable(monkeypatch):
    monkeypatch.setattr(codeact, "bwrap_works", lambda: False)
    with pytest.raises(RuntimeError, match="bubblewrap"):
        run_python("print(1)", timeout=5, sandbox="require")
    assert run_python("print(1)", timeout=5)["isolation"] == "limits only"


def test_a_long_error_output_keeps_its_end():
    r = run_python("import sys\nsys.stderr.write('noise\\n' * 10**5)\nraise ValueError('the real cause')",
                   timeout=10, max_output=400)
    assert r["exit_code"] == 1 and r["truncated"]
    assert r["stderr"].startswith("noise") and r["stderr"].rstrip().endswith("ValueError: the real cause")
    assert "output truncated" in r["stderr"] and len(r["stderr"]) < 500


def test_uid_leases_never_give_one_uid_to_two_holders(tmp_path):
    # two lease tables on one folder stand for two processes (two graders, or a grader and a
    # notebook): an flock on the uid's file is what keeps them apart
    from lreact.actions.codeact import UidLeases
    a, b = UidLeases(64990, 64992, tmp_path), UidLeases(64990, 64992, tmp_path)
    taken = {a.take(), a.take(), a.take()}
    assert taken == {64990, 64991, 64992}
    with pytest.raises(RuntimeError, match="no free user id"):
        b.take()
    a.give(64991)
    assert b.take() == 64991
    b.give(64991)
    assert a.take() == 64991


# --- other platforms (issue 19 §3): a plain message and a result, never an exception ---------
def test_platform_kind_follows_os_name_and_sys_platform(monkeypatch):
    monkeypatch.setattr(codeact.sys, "platform", "darwin")
    assert codeact.platform_kind() == "macos"
    monkeypatch.setattr(codeact.sys, "platform", "linux")
    assert codeact.platform_kind() == "linux"
    monkeypatch.setattr(codeact.os, "name", "nt")
    assert codeact.platform_kind() == "windows"


def test_on_windows_a_code_action_runs_with_the_time_and_output_limits_and_says_so(monkeypatch):
    # Windows has no resource limits and no process groups: run_python used to raise there, so
    # Exercise 11 and lab 2 D.3 crashed; now it runs with what can be protected and says what not
    monkeypatch.setattr(codeact, "platform_kind", lambda: "windows")
    killed = []
    real_kill = codeact._kill_group
    monkeypatch.setattr(codeact, "_kill_group", lambda proc, kind: (killed.append(kind),
                                                                      real_kill(proc, kind)))
    r = run_python("print(6 * 7)", timeout=10)
    assert (r["stdout"], r["exit_code"], r["isolation"]) == ("42\n", 0, "time and output limits only")
    r = run_python("while True: pass", timeout=1)
    assert r["timed_out"] and killed[-1] == "windows"
    text = codeact.isolation()
    assert text == codeact.NOT_PROTECTED_WINDOWS
    assert "NOT limited" in text and "WSL" in text and "Binder" in text


def test_exercise_11_is_checked_on_windows_instead_of_raising(monkeypatch):
    from lreact.checks import run_code_action
    monkeypatch.setattr(codeact, "platform_kind", lambda: "windows")
    code = ("temps = {c: float(get_weather(c).split('°')[0]) for c in ['Berlin', 'Paris', 'Madrid']}\n"
            "answer = max(temps, key=temps.get)")
    calls, answer = run_code_action(code, {"Berlin": "12°C, rainy", "Paris": "15°C, cloudy",
                                           "Madrid": "24°C, sunny"})
    assert (calls, answer) == (["Berlin", "Paris", "Madrid"], "Madrid")


def test_on_macos_the_process_limit_is_counted_with_ps_and_never_above_the_hard_limit(monkeypatch):
    # macOS: no /proc, so the processes of the user are counted with ps; an unprivileged process
    # cannot raise RLIMIT_NPROC's hard limit (kern.maxprocperuid), so the cap is clamped to it
    import resource
    monkeypatch.setattr(codeact, "platform_kind", lambda: "macos")
    counted = codeact._user_process_count()
    assert isinstance(counted, int) and counted >= 1
    assert codeact._process_limit(None, False) <= counted + codeact.MAX_PROCESSES + 5
    real = resource.getrlimit
    monkeypatch.setattr(resource, "getrlimit", lambda which: (
        (50, 60) if which == resource.RLIMIT_NPROC else real(which)))
    assert codeact._process_limit(None, False) == 60
    assert codeact._take_uid() is None          # no setpriv, no uid leases: not Linux
    r = run_python("print('ok')", timeout=10)
    assert (r["stdout"], r["isolation"]) == ("ok\n", "limits only")
    text = codeact.isolation()
    assert text.startswith("code actions run WITHOUT a sandbox on macOS") and "CAN read" in text


def test_a_required_limit_the_system_refuses_means_the_code_is_not_run(monkeypatch):
    # the old macOS failure: a process limit above the hard limit made every run crash in the
    # runner; now the code does not run at all and the caller is told why
    monkeypatch.setattr(codeact, "_process_limit", lambda uid, use_bwrap: -7)
    r = run_python("print('ran')", timeout=10, sandbox="off")
    assert r["exit_code"] == codeact.LIMIT_REFUSED and r["stdout"] == ""
    assert "RLIMIT_NPROC" in r["stderr"] and "the code was not run" in r["stderr"]


def test_the_fork_bomb_demo_is_only_allowed_where_a_process_limit_holds(monkeypatch):
    monkeypatch.setattr(codeact, "platform_kind", lambda: "windows")
    assert codeact.fork_bomb_contained() is False
    monkeypatch.setattr(codeact, "platform_kind", lambda: "macos")
    monkeypatch.setattr(codeact.os, "geteuid", lambda: 501)
    assert codeact.fork_bomb_contained() is True           # RLIMIT_NPROC binds a normal user
    monkeypatch.setattr(codeact.os, "geteuid", lambda: 0)
    assert codeact.fork_bomb_contained() is False          # root is exempt, no fresh uid on macOS
    assert "do not run the fork-bomb example" in codeact.isolation()
    monkeypatch.setattr(codeact, "platform_kind", lambda: "linux")
    monkeypatch.setattr(codeact.shutil, "which", lambda name: "/usr/bin/" + name)
    assert codeact.fork_bomb_contained() is True           # root hands each run a fresh uid
