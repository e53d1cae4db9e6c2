"""The channel between the trusted process and the student process (autograder/inside/channel/link.py).

Values cross as plain data only; what comes back is rebuilt as plain values; objects of the
tests stay with the tests and are reached through handles that show public names only.
"""
import math
import os
import threading
import time

import numpy as np
import pytest

from autograder.inside.channel.link import ChannelError, Codec, NotPlainData, Pipe
from autograder.inside.student import StudentLink, StudentNamespace
from autograder.inside.trusted_namespace import TrustedNamespace
from lreact import AssistantMessage, ToolCall, ToolCallError, UserMessage


def roundtrip(value):
    t, s = Codec("T"), Codec("S")
    return s.decode(t.encode(value))


@pytest.mark.parametrize("value", [
    None, True, 3, -0.0, "x", [1, [2.5, "a"]], (1, (2,)), {"a": 1, 2: [None]}, {1, 2},
    b"\x00\x01", [float("inf"), float("-inf")],
    UserMessage("hi"),
    AssistantMessage("t", [ToolCall("c1", "get_weather", '{"city": "Berlin"}')]),
])
def test_plain_values_cross_unchanged(value):
    assert roundtrip(value) == value
    assert type(roundtrip(value)) is type(value)


def test_nan_arrays_and_numpy_scalars_cross():
    assert math.isnan(roundtrip(float("nan")))
    a = roundtrip(np.array([[1.0, np.nan], [-np.inf, 2.0]]))
    assert a.shape == (2, 2) and a.dtype == np.float64 and np.isnan(a[0, 1])
    assert type(roundtrip(np.int64(3))) is np.int64
    assert roundtrip(np.array([True, False])).dtype == bool


def test_subclasses_arrive_as_the_plain_type():
    class Sneaky(list):
        def __eq__(self, other):
            return True

    class Liar(str):
        pass

    out = roundtrip(Sneaky([1, 2]))
    assert type(out) is list and out != [3]
    assert type(roundtrip(Liar("a"))) is str


def test_a_student_object_that_is_not_plain_data_is_refused():
    class Thing:
        pass

    with pytest.raises(NotPlainData):
        Codec("S").encode(Thing())


@pytest.mark.parametrize("bad", [{"x": 1}, {"a": ["<f8", [1], ["nan?"]]}, {"m": ["Nope", []]},
                                 {"T": [99, True]}, {"t": "notalist"}, {"n": ["O", 1]}])
def test_malformed_values_are_refused(bad):
    with pytest.raises((NotPlainData, TypeError)):
        Codec("T").decode(bad)


def test_exceptions_are_rebuilt_by_name_and_unknown_ones_become_plain_types():
    t = Codec("T")

    class Mine(KeyError):
        pass

    e = t.decode_exception(Codec("S").encode_exception(Mine("Atlantis")))
    assert type(e) is KeyError and e.args == ("Atlantis",)
    e = t.decode_exception(Codec("S").encode_exception(ToolCallError("schema violation")))
    assert type(e) is ToolCallError and "schema" in str(e)
    e = t.decode_exception(Codec("S").encode_exception(SystemExit(3)))
    assert type(e) is RuntimeError


@pytest.fixture
def pair():
    """A TrustedNamespace object here, and the student's side in a thread, joined by real pipes."""
    a, b = os.pipe(), os.pipe()
    answers = StudentNamespace({"0": SOURCE, "1": LARGE})
    link = StudentLink(Pipe(a[0], b[1]), "S", answers.handle)
    answers.link = link

    def serve():
        try:
            while True:
                link.pipe.send(link.serve(link.pipe.recv(None)))
        except BaseException:  # noqa: BLE001 - the test ended
            pass

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    tests = TrustedNamespace(Pipe(b[0], a[1]), lambda event: None, 5)
    assert tests.run_student(0)["ok"]
    yield tests
    tests.link.pipe.send({"k": "q", "op": "bye"})
    server.join(5)
    for fd in (*a, *b):
        os.close(fd)
    from IPython.core.interactiveshell import InteractiveShell
    InteractiveShell.clear_instance()   # this process is not a notebook kernel after the test


SOURCE = '''
import numpy as np
answer = [0.25, 0.75]
def append_twice(history, x):
    history.append(x)
    history.append(x)
    return len(history)
def draw(rng, n):
    return [int(rng.integers(0, 10)) for _ in range(n)]
def draw_choice(rng, p, n):
    q = np.array(p)
    out = [int(rng.choice(len(q), p=q)) for _ in range(n)]
    q[:] = 0                   # changing an argument after the draw does not change the log
    return out, isinstance(rng, np.random.Generator)
def draw_shifting(rng, n):
    import numpy as np
    lam, out = np.array([2.0, 3.0]), []
    for i in range(n):
        out.extend(int(x) for x in rng.poisson(lam))   # how much it draws depends on lam
        if i % 3 == 2:              # the same array, changed in place: other arguments
            lam *= 4
    out.append(int(rng.integers(0, 10)))
    return out
def forge_log(rng):
    rng.lreact_log.append(["__setstate__", [], [], 1])
    return 1
def call_back(fn, x):
    return fn(x) + 1
def call_many(fn, z, n):
    out = []
    for _ in range(n):
        p = fn(z)
        out.append(float(p[0]))
        p[0] = -1.0            # changing a result changes only this copy
    return out
def call_many_scaled(fn, z, t, n):
    import numpy as np
    z, out = np.asarray(z, dtype=float), []
    for _ in range(n):
        p = fn(z, t)
        out.append(float(p[0]))
        p[0] = 7.0             # changing a result changes only this copy
    return out
def peek(obj):
    out = []
    for name in ("_secret", "__globals__", "gi_frame", "f_globals"):
        try:
            getattr(obj, name)
            out.append(name)
        except Exception:
            pass
    try:
        obj.calls = []
    except Exception:
        out.append("read-only")
    return out
def fails():
    raise ValueError("bad input")
def zero_tail(a):
    a[1:] = 0
    return float(a.sum())
'''


LARGE = '''
import numpy as np
big = np.zeros(20_000_000)        # a large variable that no test needs to read
small = [1, 2, 3]
def too_big():
    return np.zeros(5_000_000)
def huge_int():
    return 10 ** 5000
def quarter():
    return np.longdouble(1) / 4
'''


def test_data_names_arrive_as_values_and_functions_as_calls(pair):
    assert pair.ns["answer"] == [0.25, 0.75] and type(pair.ns["answer"]) is list
    history = ["a"]
    assert pair.ns["append_twice"](history, "b") == 3
    assert history == ["a", "b", "b"]          # synced back into the same list
    a = np.array([1.0, 2.0, 3.0])
    assert pair.ns["zero_tail"](a) == 1.0
    assert list(a) == [1.0, 0.0, 0.0]          # an array written in place, as in one kernel


def test_objects_of_the_tests_stay_here_and_are_called_back(pair):
    assert pair.ns["call_back"](lambda x: x * 10, 4) == 41


def test_a_pure_function_of_the_tests_is_asked_once_per_distinct_arguments(pair, monkeypatch):
    """sample_token's frequency tests hand in the course's temperature_softmax & co.
    (``lreact.labchecks.PURE``): one round trip per distinct arguments, not one per draw."""
    calls = []

    def halve(z):
        calls.append(list(z))
        return np.asarray(z, dtype=float) / 2

    assert pair.ns["call_many"](halve, [2.0, 4.0], 5) == [1.0] * 5
    assert len(calls) == 5                       # an ordinary function: asked every time
    calls.clear()

    def pure_halve(z):
        return halve(z)

    pure_halve.lreact_pure = True
    assert pair.ns["call_many"](pure_halve, [2.0, 4.0], 5) == [1.0] * 5
    assert pair.ns["call_many"](pure_halve, [6.0, 4.0], 3) == [3.0] * 3
    assert calls == [[2.0, 4.0], [6.0, 4.0]]     # once per distinct arguments
    from lreact import labchecks
    monkeypatch.setattr(labchecks, "_student_code_on_stack", lambda frame: False)
    assert labchecks.reference("sampling", "temperature_softmax").lreact_pure is True


def test_a_pure_call_with_array_and_number_arguments_is_served_from_its_quick_key(pair):
    """The cache's quick path (arrays, numbers: keyed by type and bytes, no encoding): asked
    once per distinct arguments; each caller gets its own copy; equal-looking arguments of
    another type or sign are other arguments."""
    calls = []

    def scale(z, t):
        calls.append((list(z), t, type(t).__name__))
        return np.asarray(z, dtype=float) * t

    scale.lreact_pure = True
    z = [2.0, 4.0]
    assert pair.ns["call_many_scaled"](scale, z, 0.5, 4) == [1.0] * 4
    assert pair.ns["call_many_scaled"](scale, z, 0.5, 2) == [1.0] * 2   # still cached
    assert calls == [([2.0, 4.0], 0.5, "float")]
    assert pair.ns["call_many_scaled"](scale, z, -0.0, 1) == [-0.0]
    assert pair.ns["call_many_scaled"](scale, z, 0.0, 1) == [0.0]
    assert pair.ns["call_many_scaled"](scale, z, 1, 1) == [2.0]
    assert pair.ns["call_many_scaled"](scale, z, True, 1) == [2.0]
    assert [c[1:] for c in calls[1:]] == [(-0.0, "float"), (0.0, "float"), (1, "int"),
                                          (True, "bool")]


def test_the_quick_key_tells_apart_what_the_encoding_tells_apart():
    from autograder.inside.channel.quickkey import fresh_copy as _fresh, quick_key as _quick_key

    a = np.array([1.0, 2.0])
    assert _quick_key(1, (a, 0.5), {}) == _quick_key(1, (a.copy(), 0.5), {})
    assert _quick_key(1, (a,), {}) != _quick_key(2, (a,), {})
    assert _quick_key(1, (a,), {}) != _quick_key(1, (a.astype(np.float32),), {})
    assert _quick_key(1, (a,), {}) != _quick_key(1, (a.reshape(2, 1),), {})
    assert len({_quick_key(1, (x,), {}) for x in (1, 1.0, True, 0.0, -0.0, "1", None)}) == 7
    assert _quick_key(1, (a,), {"t": 0.5}) == _quick_key(1, (a,), {"t": 0.5})
    lists = [[1.0, 2.0], (1.0, 2.0), [1, 2.0], [[1.0, 2.0]], np.array([1.0, 2.0])]
    assert len({_quick_key(1, (x,), {}) for x in lists}) == 5    # a list is not its array
    assert _quick_key(1, ([1.0, 2.0],), {}) == _quick_key(1, ([1.0, 2.0],), {})
    ids = [[1, 2], [1, True], [True, 1], [True, True], (1, 2), ["1", "2"], [1, 2.0], [1, None],
           [None, None], [1, 2, 3], [0.0], [-0.0], [], ()]     # token-id prefixes and kin
    assert len({_quick_key(1, (x,), {}) for x in ids}) == len(ids)
    assert _quick_key(1, ([1, 2],), {}) == _quick_key(1, ([1, 2],), {}) is not None
    assert _quick_key(1, ([[[1.0]]],), {}) is None              # deeper: the encoded key
    assert _quick_key(1, ([1.0, {"a": 1}],), {}) is None        # other kinds: the encoded key
    assert _quick_key(1, (np.array(["x"]),), {}) is None
    assert _quick_key(1, (a.astype(object),), {}) is None
    assert _quick_key(1, (np.float64(1.0),), {}) is None        # a numpy scalar is not a float
    kept = np.array([1.0])
    copy = _fresh(kept)
    copy[0] = 9.0
    assert kept[0] == 1.0 and _fresh([1.0]) is None and _fresh(2.5) == 2.5


def test_a_generator_crosses_by_its_state_and_moves_on_as_in_one_kernel(pair):
    # the answer draws from a Generator built from the test's state; the test's rng then
    # continues where the answer left it, exactly as if both ran in one process
    rng, alone = np.random.default_rng(3), np.random.default_rng(3)
    assert pair.ns["draw"](rng, 4) == [int(alone.integers(0, 10)) for _ in range(4)]
    assert int(rng.integers(0, 10**9)) == int(alone.integers(0, 10**9))
    mt = np.random.Generator(np.random.MT19937(5))
    assert pair.ns["draw"](mt, 2) == [int(x) for x in
                                      np.random.Generator(np.random.MT19937(5)).integers(0, 10, 2)]


def test_the_tests_rng_moves_only_by_its_own_methods_replayed_here(pair):
    # the answer's mirror logs its calls (not the calls choice makes inside), the test's rng
    # replays them: same draws, same state afterwards, and a forged log entry is refused
    rng, alone = np.random.default_rng(11), np.random.default_rng(11)
    p = [0.1, 0.2, 0.7]
    drawn, is_generator = pair.ns["draw_choice"](rng, p, 30)
    assert is_generator
    assert drawn == [int(alone.choice(3, p=np.array(p))) for _ in range(30)]
    assert rng.bit_generator.state == alone.bit_generator.state
    with pytest.raises(TypeError, match="malformed"):
        pair.ns["forge_log"](rng)
    assert rng.bit_generator.state == alone.bit_generator.state


def test_an_array_changed_in_place_between_draws_is_logged_as_the_new_call(pair):
    rng, alone = np.random.default_rng(4), np.random.default_rng(4)
    lam, expected = np.array([2.0, 3.0]), []
    for i in range(12):
        expected.extend(int(x) for x in alone.poisson(lam))
        if i % 3 == 2:
            lam *= 4
    expected.append(int(alone.integers(0, 10)))
    assert pair.ns["draw_shifting"](rng, 12) == expected
    assert rng.bit_generator.state == alone.bit_generator.state


@pytest.mark.parametrize("bits", ["PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"])
def test_a_replayed_run_of_identical_calls_moves_the_rng_as_the_calls_did(bits):
    """The replay batches a run of identical ``random()``, ``standard_normal()`` and
    ``choice(a, p=p)`` calls into one call with ``size``: proved here against the calls one by
    one, on every bit generator numpy ships; ``integers`` (which buffers) is replayed singly."""
    from autograder.inside.channel import mirror
    from autograder.inside.channel.codec import Codec

    codec = Codec("T")
    p = np.array([0.5, 0.2, 0.2, 0.1])
    entries = [("random", [], {}), ("standard_normal", [], {}), ("choice", [4], {"p": p}),
               ("choice", [np.arange(10, 14)], {"p": p.tolist()}), ("integers", [0, 10], {}),
               ("integers", [0, 2**40], {})]
    for seed in range(3):
        for name, args, kw in entries:
            for count in (1, 2, 7, 1000):
                ours = np.random.Generator(getattr(np.random, bits)(seed))
                alone = np.random.Generator(getattr(np.random, bits)(seed))
                enc_args, enc_kw = codec.encode_arguments(args, kw)
                mirror.replay(codec, ours, [[name, enc_args, enc_kw, count]])
                method = getattr(alone, name)
                for _ in range(count):
                    method(*args, **kw)
                # the same state: the next raw outputs agree (MT19937's state holds an array)
                assert list(ours.bit_generator.random_raw(8)) == \
                    list(alone.bit_generator.random_raw(8)), (name, count)
    assert not mirror._draws_alike("integers", [0, 10], {})
    assert not mirror._draws_alike("choice", [4], {"p": p, "replace": False})
    assert not mirror._draws_alike("choice", [4], {})


def test_repeat_makes_n_calls_in_one_request_with_the_same_arguments(pair):
    from lreact.labchecks import repeat
    rng, alone = np.random.default_rng(8), np.random.default_rng(8)
    sent = []
    real_send = pair.link.pipe.send
    pair.link.pipe.send = lambda m: (sent.append(m), real_send(m))[1]
    try:
        got = repeat(pair.ns["draw"], 50, rng, 3)
    finally:
        pair.link.pipe.send = real_send
    assert got == [[int(alone.integers(0, 10)) for _ in range(3)] for _ in range(50)]
    assert len(sent) == 1 and sent[0]["repeat"] == 50
    assert int(rng.integers(0, 10**9)) == int(alone.integers(0, 10**9))
    history = []
    assert repeat(pair.ns["append_twice"], 3, history, "x") == [2, 4, 6]
    assert history == ["x"] * 6
    # in one process (the student's kernel) it is the plain loop
    assert repeat(lambda r: int(r.integers(0, 10)), 3, np.random.default_rng(8)) == \
        [int(x) for x in np.random.default_rng(8).integers(0, 10, 3)]


def test_the_toy_model_crosses_by_name_and_a_tests_own_function_stays_a_handle():
    from lreact import grammar
    t, s = Codec("T"), Codec("S")
    assert t.encode(grammar.toy_logits) == {"f": "lreact.grammar.toy_logits"}
    assert s.decode(t.encode(grammar.toy_logits)) is grammar.toy_logits   # that side's own copy

    def fan(ids):
        return grammar.toy_logits(ids)

    assert "T" in t.encode(fan)
    with pytest.raises(NotPlainData):
        s.decode({"f": "os.system"})


def test_the_code_sandbox_handed_to_an_answer_runs_on_the_answers_side_only():
    """A test that hands ``run_python`` to an answer hands over the answer's own copy: the code
    the answer gives it runs in the answer's sandbox.  As a handle it would run beside the tests
    (as the trusted user, with the reference implementations on its file system); and the tests'
    side never takes it back from an answer."""
    from lreact.actions import codeact
    t, s = Codec("T"), Codec("S")
    assert t.encode(codeact.run_python) == {"f": "lreact.actions.codeact.run_python"}
    assert s.decode(t.encode(codeact.run_python)) is codeact.run_python
    with pytest.raises(NotPlainData, match="answers only"):
        t.decode(s.encode(codeact.run_python))


@pytest.mark.parametrize("bad", [
    {"g": ["Evil", {"d": []}]},
    {"g": ["PCG64", {"d": [["bit_generator", "MT19937"]]}]},
    {"g": ["PCG64", {"d": [["bit_generator", "PCG64"], ["state", "x"]]}]},
    {"g": ["PCG64", "no state"]},
])
def test_a_malformed_generator_state_is_refused(bad):
    with pytest.raises((NotPlainData, TypeError)):
        Codec("T").decode(bad)


def test_handles_show_public_names_only_and_are_read_only(pair):
    class Secretive:
        _secret = "expected"

    assert pair.ns["peek"](Secretive()) == ["read-only"]


def test_an_answers_exception_arrives_as_its_type(pair):
    with pytest.raises(ValueError, match="bad input"):
        pair.ns["fails"]()


def test_channel_failures_cannot_be_caught_as_an_answers_exception():
    assert not issubclass(ChannelError, Exception)


# --- what the trusted process accepts back (issue 16: points 1, 3, 4) ---------------------------

@pytest.fixture
def scripted():
    """A trusted link here; in a thread, a "student process" that answers each request with the
    next scripted reply (as a hostile one can: it runs the student's code) and records them."""
    from autograder.inside.channel.link import Link
    a, b = os.pipe(), os.pipe()
    student, trusted = Pipe(a[0], b[1]), Pipe(b[0], a[1])
    replies, seen = [], []

    def serve():
        try:
            while True:
                m = student.recv(None)
                if m.get("op") == "bye":
                    return
                seen.append(m)
                student.send(replies.pop(0) if replies else
                             {"k": "r", "x": {"e": ["RuntimeError", ["nothing scripted"]]}})
        except BaseException:  # noqa: BLE001 - the test ended
            pass

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    link = Link(trusted, "T", lambda m: (None, None))
    link.deadline = time.monotonic() + 5     # the old code would wait for ever otherwise
    yield link, replies, seen
    link.broken = None
    link.pipe.send({"k": "q", "op": "bye"})
    server.join(5)
    for fd in (*a, *b):
        os.close(fd)


def test_a_student_handle_here_can_only_be_called_and_serves_nothing_else(scripted):
    link, replies, seen = scripted
    fn = link.codec.decode({"S": [7, True]})
    with pytest.raises(TypeError):
        iter(fn)
    with pytest.raises(TypeError):
        len(fn)
    with pytest.raises(TypeError):
        fn[0]
    with pytest.raises(AttributeError):
        fn.content
    assert bool(fn) and fn == fn and fn != 3 and "student" in repr(fn) and str(fn) == repr(fn)
    assert seen == []                        # none of that asked the student process anything
    replies.append({"k": "r", "v": 41})
    assert fn(1) == 41 and seen[0]["target"] == {"ref": 7}     # calling is what it does
    with pytest.raises(NotPlainData, match="not a function"):
        link.codec.decode({"S": [8, False]})  # a student object that is not a function


@pytest.mark.parametrize("reply", [
    [0],                                     # one token where three were asked for
    [0, 0, 0, 0],
    {"t": [0, 0, 0]},                        # a tuple, not a list
    {"S": [3, True]},                        # a live object whose iteration it would serve
    [{"S": [3, True]}, 0, 0],                # a handle among the values
    {"d": [[0, 0], [1, 0], [2, 0]]},
])
def test_a_repeat_reply_must_be_a_list_of_exactly_n_plain_values(scripted, reply):
    from autograder.inside.trusted_namespace import Answer
    from lreact.labchecks import repeat
    link, replies, seen = scripted
    replies.append({"k": "r", "v": reply})
    with pytest.raises(TypeError, match=r"repeat\(sample_token, 3|not plain data"):
        Answer(link, "sample_token").lreact_repeat(3, ([0.0, 1.0],), {})
    replies.append({"k": "r", "v": [1, 0, 1]})
    assert repeat(Answer(link, "sample_token"), 3, [0.0, 1.0]) == [1, 0, 1]
    assert seen[-1]["repeat"] == 3


def test_labchecks_repeat_takes_only_a_list_of_n_values_from_a_batch():
    from lreact.labchecks import repeat

    class Batch:
        def __init__(self, values):
            self.values = values

        def lreact_repeat(self, n, args, kwargs):
            return self.values

    assert repeat(Batch([1, 2]), 2) == [1, 2]
    for values in ([1], (1, 2), {1: 0, 2: 0}):
        with pytest.raises(TypeError, match="2 calls"):
            repeat(Batch(values), 2)


def test_a_failed_tests_error_is_written_without_asking_the_student_process(scripted):
    link, replies, seen = scripted
    tests = TrustedNamespace(link.pipe, lambda event: None, 5)
    tests.ns["fn"] = fn = tests.link.codec.decode({"S": [5, True]})
    r = tests.run_here("raise AssertionError(fn)", "<test>")
    assert r["error"] == "AssertionError: <the student's function 5>" and seen == []

    class Loud(Exception):                   # a message that would call the answers
        def __str__(self):
            return str(fn(1))

    tests.ns.update(Loud=Loud)
    r = tests.run_here("raise Loud()", "<test>")
    assert r["error"].startswith("Loud: (its message could not be written)") and seen == []
    tests.stop("the student process stopped answering")   # later tests: their own errors
    r = tests.run_here("raise AssertionError(fn)", "<test>")
    assert r["error"] == "AssertionError: <the student's function 5>"


def test_decoding_refuses_dict_and_set_keys_that_share_one_hash():
    # ints k * (2**61 - 1) all hash to 0: built one by one, such a dict takes quadratic time
    colliding = [k * (2**61 - 1) for k in range(5000)]
    with pytest.raises(NotPlainData, match="hash"):
        Codec("T").decode({"d": [[k, 0] for k in colliding]})
    with pytest.raises(NotPlainData, match="hash"):
        Codec("T").decode({"s": colliding})
    assert len(Codec("T").decode({"d": [[k, 0] for k in range(5000)]})) == 5000


def test_decoding_one_reply_is_bounded_in_time_and_in_values(monkeypatch):
    from autograder.inside.channel import codec
    many = {"t": [{"t": [i]} for i in range(2000)]}
    assert len(Codec("T").decode(many)) == 2000
    monkeypatch.setattr(codec, "MAX_DECODE_SECONDS", 0.0)
    with pytest.raises(NotPlainData, match="took more than"):
        Codec("T").decode(many)
    monkeypatch.setattr(codec, "MAX_DECODE_SECONDS", 10.0)
    monkeypatch.setattr(codec, "MAX_ITEMS", 1000)
    with pytest.raises(NotPlainData, match="more than 1,000 values"):
        Codec("T").decode(many)
    with pytest.raises(NotPlainData, match="too large"):
        Codec("S").encode(np.zeros(1001))


@pytest.mark.parametrize("value", [
    np.longdouble(1) / 3, np.float16(0.1), np.float32(0.1), np.complex64(1 - 2j),
    np.clongdouble(np.longdouble(1) / 3 + 1j), np.uint64(2**64 - 1), 1.5 - 0.5j,
    np.array([np.longdouble(1) / 3, np.nan, -np.inf], dtype=np.longdouble),
    np.array([[1 + 2j, np.nan - 1j]], dtype=np.complex128), np.array([0.1, 2.5], np.float16),
])
def test_numbers_of_every_dtype_cross_with_their_dtype_and_exact_value(value):
    out = roundtrip(value)
    assert type(out) is type(value) and np.asarray(out).dtype == np.asarray(value).dtype
    assert np.array_equal(np.asarray(out), np.asarray(value), equal_nan=True)
    if isinstance(value, np.longdouble):     # compares as in the student's own kernel
        assert abs(out - np.longdouble(1) / 3) == 0


def test_a_reply_that_cannot_be_sent_fails_that_request_only(pair):
    assert pair.run_student(1)["ok"]
    pair.link.deadline = time.monotonic() + 20      # a dead student side fails, never hangs
    with pytest.raises(TypeError, match="too large"):
        pair.ns["too_big"]()
    with pytest.raises(TypeError, match="JSON cannot write"):
        pair.ns["huge_int"]()
    x = pair.ns["quarter"]()
    assert type(x) is np.longdouble and abs(x - 0.25) < 1e-12
    from autograder.inside.trusted_namespace import ValueUnavailable
    with pytest.raises(ValueUnavailable, match="big cannot be used by the tests: too large"):
        float(pair.ns["big"][0])
    assert pair.ns["small"] == [1, 2, 3]     # the cell's other values arrived
    assert pair.ns["append_twice"]([], 1) == 2      # and the process still answers


def test_each_call_an_answer_makes_is_a_message_of_its_own(monkeypatch):
    # a sampling loop logs 1,000 rng calls (each with a p of 5 values) inside one reply; only
    # what is sent counts against the reply's budget, not every call made meanwhile
    from autograder.inside.channel import codec
    monkeypatch.setattr(codec, "MAX_ITEMS", 1000)
    s = Codec("S")
    rng = s.decode(Codec("T").encode(np.random.default_rng(0)))
    p = np.array([0.4, 0.3, 0.25, 0.03, 0.02])
    with s.sending():
        draws = [int(rng.choice(5, p=p)) for _ in range(1000)]
        assert s.encode(draws) == draws
    assert len(rng.lreact_log) == 1 and rng.lreact_log[0][3] == 1000


# --- in-place changes reach the tests as in one kernel (an outside review: a dict created in one
# answer cell and filled in a later one never reached the tests; 8 Exercise 14 tests failed) ---

IN_PLACE = {
    "0": "import numpy as np\nfirst = {}\nevents = []\nweights = np.zeros(3)\nlabels = set()\n"
         "count = 0\n"
         "def log(x):\n    events.append(x)\n    return len(events)\n"
         "def bump():\n    global count\n    count += 1\n",
    "1": "first.update(c1=0, c2=2)\nweights[1] = 5.0\nlabels.add('x')\n",
    "2": "first['c3'] = 1\n",
}


@pytest.fixture
def cells_pair():
    tests, close = _channel(IN_PLACE, run=False)
    yield tests
    close()


def test_a_value_filled_in_place_by_a_later_cell_reaches_the_tests(cells_pair):
    t = cells_pair
    assert t.run_student(0)["ok"]
    held = t.ns["first"]                   # a test may hold the object across cells
    assert t.run_student(1)["ok"]
    assert t.ns["first"] == {"c1": 0, "c2": 2} and held is t.ns["first"]
    assert list(t.ns["weights"]) == [0.0, 5.0, 0.0] and t.ns["labels"] == {"x"}
    assert t.run_student(2)["ok"]
    assert t.ns["first"] == {"c1": 0, "c2": 2, "c3": 1}


def test_an_unchanged_value_is_not_sent_again(cells_pair):
    t = cells_pair
    assert t.run_student(0)["ok"]
    sent = []
    install = t.install
    t.install = lambda names, gone: (sent.append(sorted(names)), install(names, gone))
    assert t.run_student(2)["ok"]          # changes only `first`
    assert sent == [["first"]]


def test_a_global_an_answer_changes_reaches_a_test_that_reads_it(cells_pair):
    t = cells_pair
    assert t.run_student(0)["ok"]
    t.watch_names(frozenset({"events", "count", "log", "bump"}))
    events = t.ns["events"]
    assert t.ns["log"]("a") == 1 and t.ns["log"]("b") == 2
    assert events == ["a", "b"] and t.ns["events"] is events     # the same list, filled
    t.ns["bump"]()
    assert t.ns["count"] == 1                                   # rebound by `global`


def test_calls_carry_no_names_when_the_tests_read_none(cells_pair):
    t = cells_pair
    assert t.run_student(0)["ok"]
    t.watch_names(frozenset({"log"}))      # a function only: nothing to bring back
    assert t.link.on_names is None
    assert t.ns["log"]("a") == 1
    assert t.ns["events"] == []            # as the tests last saw it; no test reads it


# --- values of the standard library and the notebook's own classes cross with their type and
# behaviour; a test's deletions and its captured output work as in one kernel (issue: tests
# written as nbgrader teaches; tests/test_nbgrader_patterns.py compares with stock nbgrader) ---

def _channel(cells: dict, run: bool = True):
    a, b = os.pipe(), os.pipe()
    answers = StudentNamespace(cells)
    link = StudentLink(Pipe(a[0], b[1]), "S", answers.handle)
    answers.link = link

    def serve():
        try:
            while True:
                link.pipe.send(link.serve(link.pipe.recv(None)))
        except BaseException:  # noqa: BLE001 - the test ended
            pass

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    tests = TrustedNamespace(Pipe(b[0], a[1]), lambda event: None, 5)
    for index in sorted(cells, key=int) if run else ():
        assert tests.run_student(int(index))["ok"], index

    def close():
        tests.link.pipe.send({"k": "q", "op": "bye"})
        server.join(5)
        for fd in (*a, *b):
            os.close(fd)
        from IPython.core.interactiveshell import InteractiveShell
        InteractiveShell.clear_instance()
    return tests, close


STDLIB = '''
import collections, decimal, fractions, enum, dataclasses
counts = collections.Counter("abracadabra")
ordered = collections.OrderedDict([("b", 1), ("a", 2)])
grouped = collections.defaultdict(list, {"a": [1]})
recent = collections.deque([1, 2, 3], maxlen=3)
third, tenth = fractions.Fraction(1, 3), decimal.Decimal("0.1")
frozen, raw = frozenset({"x", "y"}), bytearray(b"ab")
keys, values, items = {"a": 1}.keys(), {"a": 1}.values(), {"a": 1}.items()
evens = range(0, 10, 2)
Point = collections.namedtuple("Point", "x y")
origin = Point(0, 0)
class Colour(enum.IntEnum):
    RED = 1
    GREEN = 2
warm = Colour.RED
@dataclasses.dataclass
class Pair:
    a: int
    b: list
pair = Pair(1, [2])
class NegativeSide(ValueError):
    pass
class Shape:
    def __init__(self, side):
        if side < 0:
            raise NegativeSide(f"side {side}")
        self.side = side
    def area(self):
        return self.side ** 2
class Square(Shape):
    pass
class Fancy:
    def __eq__(self, other):
        return True
shape = Square(3)
fancy = Fancy()
def make(side):
    return Square(side)
def side_of(shape):
    return shape.side
'''


def test_the_standard_librarys_values_keep_their_type_and_behaviour():
    import collections
    import decimal
    import fractions
    t, close = _channel({"0": STDLIB})
    try:
        ns = t.ns
        assert type(ns["counts"]) is collections.Counter and ns["counts"].most_common(1) == [("a", 5)]
        assert type(ns["ordered"]) is collections.OrderedDict
        ns["ordered"].move_to_end("b")
        assert list(ns["ordered"]) == ["a", "b"]
        assert ns["grouped"]["missing"] == [] and ns["grouped"].default_factory is list
        assert ns["recent"].maxlen == 3 and list(ns["recent"]) == [1, 2, 3]
        assert ns["third"] == fractions.Fraction(1, 3) and type(ns["third"]) is fractions.Fraction
        assert ns["tenth"] * 3 == decimal.Decimal("0.3")
        assert type(ns["frozen"]) is frozenset and type(ns["raw"]) is bytearray
        assert ns["keys"] & {"a"} == {"a"} and list(ns["values"]) == [1]
        assert dict(ns["items"]) == {"a": 1} and ns["evens"] == range(0, 10, 2)
    finally:
        close()


def test_the_notebooks_classes_cross_as_their_shape_and_keep_isinstance():
    t, close = _channel({"0": STDLIB})
    try:
        ns = t.ns
        assert isinstance(ns["origin"], ns["Point"]) and ns["origin"]._asdict() == {"x": 0, "y": 0}
        assert ns["warm"] is ns["Colour"].RED and ns["Colour"](2) is ns["Colour"].GREEN
        assert ns["warm"] == 1                              # an IntEnum is an int, as there
        assert isinstance(ns["pair"], ns["Pair"]) and ns["pair"].b == [2]
        square = ns["make"](2)                              # built in the answers' process
        assert isinstance(square, ns["Square"]) and isinstance(square, ns["Shape"])
        assert square.side == 2 and square.area() == 4 and ns["side_of"](square) == 2
        assert isinstance(ns["Square"](5), ns["Shape"])     # calling the class from a test
        with pytest.raises(ns["NegativeSide"]) as e:
            ns["make"](-1)
        assert isinstance(e.value, ValueError) and "side -1" in str(e.value)
        with pytest.raises(TypeError, match="__eq__"):
            ns["fancy"] == ns["fancy"]                      # the student's __eq__ decides nothing
        with pytest.raises(AttributeError):
            square.side = 7
    finally:
        close()


def test_a_test_that_deletes_or_rebinds_an_answers_name_changes_it_for_that_call():
    cells = {"0": "def squares(n):\n    return [i * i for i in range(1, n + 1)]\n"
                  "def total(n):\n    return sum(squares(n))\n"}
    t, close = _channel(cells)
    try:
        src = ("orig = squares\ndel squares\ntry:\n    total(1)\nexcept NameError:\n"
               "    found = 'uses'\nelse:\n    found = 'does not use'\nfinally:\n"
               "    squares = orig\n"
               "squares = lambda n: [10] * n\nreplaced = total(2)\nsquares = orig\n"
               "after = total(2)\n")
        assert t.run_here(src, "<test>")["ok"]
        assert (t.ns["found"], t.ns["replaced"], t.ns["after"]) == ("uses", 20, 5)
    finally:
        close()


def test_what_an_answer_prints_reaches_a_test_that_captures_stdout():
    t, close = _channel({"0": "def greet(name):\n    print(f'Hello, {name}!')\n"})
    try:
        src = ("import contextlib, io\nbuf = io.StringIO()\nwith contextlib.redirect_stdout(buf):\n"
               "    greet('Ada')\ncaptured = buf.getvalue()\n")
        ran = t.run_here(src, "<test>")
        assert ran["ok"], ran
        assert t.ns["captured"] == "Hello, Ada!\n"
    finally:
        close()
