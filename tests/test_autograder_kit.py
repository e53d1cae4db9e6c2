"""The grader's kit (autograder/sandbox/kit.py): built once per content, one build at a time."""
import threading
import time

from autograder import paths
from autograder.sandbox import kit


def test_threads_that_ask_for_a_new_kit_at_once_build_it_one_at_a_time(tmp_path, monkeypatch):
    """The pool's threads all ask for the kit when a class starts.  Building it parses the
    package with ``ast``, whose state CPython 3.11 shares between threads (two parses
    interleaved raise SystemError), so the builds must not overlap; the kit is built once."""
    inside, most, built = [0], [0], []
    real = kit.answers_lreact
    guard = threading.Lock()

    def slow_answers_lreact(dest):
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.2)            # long enough for every thread to arrive meanwhile
        built.append(dest)
        real(dest)
        with guard:
            inside[0] -= 1

    monkeypatch.setattr(kit, "answers_lreact", slow_answers_lreact)
    monkeypatch.setattr(kit, "mpl_font_cache", lambda state: None)
    state = paths.State(tmp_path / "state")
    found = []
    threads = [threading.Thread(target=lambda: found.append(kit.build(state))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1 and len(built) == 1, (most, built)
    assert len(set(found)) == 1 and (found[0] / "runner.py").exists()
    assert (found[0] / "answers-lreact" / "lreact" / "sampling.py").exists()
