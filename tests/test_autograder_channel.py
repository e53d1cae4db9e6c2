"""The channel between the trusted process and the student process (autograder/channel.py).

Values cross as plain data only; what comes back is rebuilt as plain values; objects of the
tests stay with the tests and are reached through handles that show public names only.
"""
import math
import os
import threading

import numpy as np
import pytest

from autograder.channel import ChannelError, Codec, NotPlainData, Pipe
from autograder.student import Answers, StudentLink
from autograder.tester import TrustedCells
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
    """A TrustedCells object here, and the student's side in a thread, joined by real pipes."""
    a, b = os.pipe(), os.pipe()
    answers = Answers({"0": SOURCE})
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
    tests = TrustedCells(Pipe(b[0], a[1]), lambda event: None, 5)
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
def forge_log(rng):
    rng.lreact_log.append(["__setstate__", [], [], 1])
    return 1
def call_back(fn, x):
    return fn(x) + 1
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
