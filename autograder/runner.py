"""Execute one notebook: the only grader code that runs next to student code.

This file is copied into the submission's scratch folder and started with the course's
Python (inside the sandbox when there is one). It is self-contained on purpose: the
sandbox does not bind ``autograder/``.

Protocol: a JSON job on stdin ``{"notebook", "timeout", "test_cells", "sentinel", "token",
"max_output", "cwd"}``; the executed notebook plus a status as JSON on the file descriptor
given by ``--fd`` (never on stdout, which the kernel shares). The job (with the hidden tests) never touches
the disk, and this process makes itself non-dumpable so the kernel (same user) cannot read
its memory, environment or file descriptors through /proc.
"""
from __future__ import annotations

import ctypes
import json
import os
import sys

GUARD_SETUP = r'''
def _lreact_make_guard(token):
    import builtins, sys, importlib, importlib.util, math, warnings, json, operator, types
    import numpy, numpy.testing, IPython
    try:
        import lreact, lreact.sampling, lreact.chatml, lreact.tools
        packages = (lreact,)
    except ImportError:
        packages = ()
    shell = get_ipython()
    mgr = shell.input_transformer_manager
    snap = {
        "mgr": mgr,
        "cleanup": list(mgr.cleanup_transforms),
        "line": list(mgr.line_transforms),
        "token": list(getattr(mgr, "token_transformers", [])),
        "post": list(shell.input_transformers_post),
        "ast": list(shell.ast_transformers),
        "events": {k: list(v) for k, v in shell.events.callbacks.items()},
        "builtins": dict(builtins.__dict__),
        "modules": dict(sys.modules),
        "dicts": {m.__name__: dict(m.__dict__) for m in
                  (math, warnings, json, operator, numpy, numpy.testing, importlib,
                   importlib.util, types, IPython) + packages},
        "warnings": list(warnings.filters),
        "meta_path": list(sys.meta_path),
        "path_hooks": list(sys.path_hooks),
        "path": list(sys.path),
        "sys": {k: getattr(sys, k) for k in
                ("stdout", "stderr", "displayhook", "excepthook", "_getframe")},
        "ns_builtins": shell.user_ns.get("__builtins__", builtins),
    }
    # The course's reference implementations are the lab's answers: while grading, the public
    # function objects raise (aliases and wrappers of them too); the tests use private copies
    # (lreact.labchecks.reference).
    reference_functions = {
        "lreact.sampling": ("softmax", "temperature_softmax", "top_k_filter", "top_p_filter",
                            "sample_token"),
        "lreact.chatml": ("render_chatml",),
        "lreact.tools": ("get_weather", "calculate"),
        "lreact.widgets": ("constrained_step",),
    }
    poisoned = {}   # id -> (function, raising code object), found once, re-applied every time

    def raising_code(qualname):
        ns = {}
        exec(compile("def poisoned(*args, **kwargs):\n    raise RuntimeError(%r)\n" % (
            qualname + " is the course's reference implementation and is not available while "
            "grading: write your own"), "<grader>", "exec"), ns)
        return ns["poisoned"].__code__

    def poison():
        for modname, names in reference_functions.items():
            mod = snap["modules"].get(modname) or sys.modules.get(modname)
            for name in names:
                f = getattr(mod, name, None) if mod is not None else None
                if type(f) is types.FunctionType and id(f) not in poisoned \
                        and f.__closure__ is None:
                    poisoned[id(f)] = (f, raising_code(modname + "." + name))
        for f, code in poisoned.values():
            f.__code__ = code

    # builtins the tests use inline: a callable of the same name in the notebook's namespace
    # is removed before each test (a plain value such as max = 10 stays)
    shadowable = ("len", "sum", "sorted", "abs", "float", "int", "str", "list", "set", "tuple",
                  "dict", "isinstance", "all", "any", "round", "min", "max", "zip", "map",
                  "range", "enumerate", "repr", "bool", "type", "getattr", "hasattr", "iter",
                  "next", "print")
    is_callable = callable

    def unshadow():
        ns = shell.user_ns
        if ns.get("__builtins__") is not snap["ns_builtins"]:
            ns["__builtins__"] = snap["ns_builtins"]
        for name in shadowable:
            if name in ns and ns[name] is not snap["builtins"][name] and is_callable(ns[name]):
                del ns[name]

    shadowed = ("run_cell", "run_cell_async", "transform_cell", "run_ast_nodes", "run_code",
                "should_run_async", "showtraceback", "_showtraceback", "run_line_magic",
                "transform_ast")

    def guard():
        sys.settrace(None)
        sys.setprofile(None)
        for k, v in snap["sys"].items():
            setattr(sys, k, v)
        shell.input_transformer_manager = snap["mgr"]
        snap["mgr"].cleanup_transforms[:] = snap["cleanup"]
        snap["mgr"].line_transforms[:] = snap["line"]
        if hasattr(snap["mgr"], "token_transformers"):
            snap["mgr"].token_transformers[:] = snap["token"]
        shell.input_transformers_post[:] = snap["post"]
        shell.ast_transformers[:] = snap["ast"]
        for k, v in snap["events"].items():
            shell.events.callbacks[k][:] = v
        for name in shadowed:
            shell.__dict__.pop(name, None)
        builtins.__dict__.update(snap["builtins"])
        for name, mod in snap["modules"].items():
            if sys.modules.get(name) is not mod:
                sys.modules[name] = mod
        for name, d in snap["dicts"].items():
            # restore patched names (added ones stay: lazy submodules such as numpy.random)
            snap["modules"][name].__dict__.update(d)
        sys.meta_path[:] = snap["meta_path"]
        sys.path_hooks[:] = snap["path_hooks"]
        sys.path[:] = snap["path"]
        sys.path_importer_cache.clear()
        importlib.invalidate_caches()
        for name in [n for n in sys.modules if n in ("lreact.checks", "lreact.labchecks")]:
            del sys.modules[name]
        try:
            import lreact
            lreact.checks = importlib.import_module("lreact.checks")
            lreact.labchecks = importlib.import_module("lreact.labchecks")
        except ImportError:
            pass
        warnings.filters[:] = snap["warnings"]
        poison()
        unshadow()
        # lreact.labchecks.reference answers only the cell that runs next (a test or a demo
        # cell), never an answer cell: the runner does not call the guard before those
        guard.armed, arm["pending"] = None, True
        shell.events.callbacks["pre_run_cell"].append(arm_cell)
        shell.events.callbacks["post_run_cell"].append(disarm_cell)
        return token

    arm = {"pending": False}

    def arm_cell(info=None):
        if arm["pending"]:
            guard.armed, arm["pending"] = shell.execution_count, False

    def disarm_cell(result=None):
        guard.armed = None

    poison()
    guard.armed = None
    return guard
'''


def _no_dump():
    """Forbid ptrace and /proc/<pid>/{mem,environ,fd} to the kernel (same uid)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    except Exception:  # noqa: BLE001 - not Linux: nothing to do
        pass


def _prepare_scratch(cwd) -> None:
    """Create the run's writable folders (named by the environment) and enter ``cwd``."""
    import glob
    import shutil
    for var in ("HOME", "TMPDIR", "MPLCONFIGDIR", "IPYTHONDIR", "JUPYTER_RUNTIME_DIR",
                "JUPYTER_DATA_DIR", "JUPYTER_CONFIG_DIR", "XDG_CACHE_HOME"):
        if os.environ.get(var):
            os.makedirs(os.environ[var], exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    for fonts in glob.glob(os.path.join(here, "fontlist-*.json")):
        if os.environ.get("MPLCONFIGDIR"):
            shutil.copy(fonts, os.environ["MPLCONFIGDIR"])
    if cwd:
        os.makedirs(cwd, exist_ok=True)
        os.chdir(cwd)


def _name(cell, index) -> str:
    gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    return f"{index} ({gid})" if gid else f"{index} ({cell.get('id', '?')})"


def main() -> int:
    """Start the kernel first (a warm runner waits for its job), then run the job."""
    _no_dump()
    fd = int(sys.argv[sys.argv.index("--fd") + 1]) if "--fd" in sys.argv else 3
    os.set_inheritable(fd, False)
    out = os.fdopen(fd, "w", encoding="utf-8")
    scratch = os.environ.get("LREACT_SCRATCH") or os.getcwd()
    cwd = os.path.join(scratch, "work")
    _prepare_scratch(cwd)

    import signal
    import threading
    import time

    # jsonschema (via nbformat) builds an IRI grammar at import: 0.7 s of CPU per run that
    # this process never needs (it does not validate IRIs). The kernel is not affected.
    sys.modules.setdefault("rfc3987_syntax", None)
    import nbformat
    from jupyter_core.utils import run_sync
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    job = {"max_output": 100_000, "sentinel": None}
    status = {"failure": None, "guard_failed": [], "truncated": []}

    class Client(NotebookClient):
        def output(self, outs, msg, display_id, cell_index):
            # Cap what a cell may print; the sentinel line always gets through.
            max_output, sentinel = int(job["max_output"]), job["sentinel"]
            text = ""
            if msg["msg_type"] == "stream":
                text = msg["content"].get("text", "")
            elif msg["msg_type"] in ("execute_result", "display_data", "error"):
                text = json.dumps(msg["content"])[:max_output + 1]
            used = self._used.get(cell_index, 0)
            if used + len(text) > max_output:
                if sentinel and sentinel in text:
                    msg["content"]["text"] = sentinel + "\n"
                elif cell_index not in self._cut:
                    self._cut.add(cell_index)
                    status["truncated"].append(cell_index)
                    msg = {**msg, "msg_type": "stream",
                           "content": {"name": "stdout",
                                       "text": "\n[output truncated by the grader]\n"}}
                else:
                    return None
            self._used[cell_index] = used + len(text)
            return super().output(outs, msg, display_id, cell_index)

    client = Client(nbformat.v4.new_notebook(), timeout=60, allow_errors=True,
                    interrupt_on_timeout=True, kernel_name="python3", record_timing=False,
                    resources={"metadata": {"path": cwd}})
    client._used, client._cut = {}, set()

    def run_guard(first: bool, token: str) -> bool:
        expr = ("exec(compile(%r, '<grader>', 'exec'), globals()) or "
                "__import__('sys').__setattr__('_lreact_guard', "
                "globals().pop('_lreact_make_guard')(%r))" % (GUARD_SETUP, token)) if first \
            else "__import__('sys')._lreact_guard()"
        msg_id = client.kc.execute("", silent=True, store_history=False,
                                   user_expressions={"g": expr})
        while True:
            reply = run_sync(client.kc.get_shell_msg)(timeout=30)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        g = reply["content"].get("user_expressions", {}).get("g", {})
        if first:
            return g.get("status") == "ok"
        return g.get("status") == "ok" and g.get("data", {}).get("text/plain") == repr(token)

    clock = {"start": None, "index": None, "killed": None, "limit": 70.0}

    def watchdog():
        # A cell that ignores the interrupt (e.g. SIGINT ignored) gets its kernel killed.
        while True:
            time.sleep(0.5)
            start = clock["start"]
            if start is not None and time.monotonic() - start > clock["limit"]:
                clock["killed"] = clock["index"]
                try:
                    pid = client.km.provisioner.process.pid
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except OSError:
                        os.kill(pid, signal.SIGKILL)
                except Exception:  # noqa: BLE001 - already gone
                    pass
                clock["start"] = None

    threading.Thread(target=watchdog, daemon=True).start()
    nb = None
    try:
        with client.setup_kernel():
            text = sys.stdin.read()          # a warm runner waits here with its kernel up
            if not text.strip():
                return 0                     # never used: the grader closed it
            job.update(json.loads(text))
            nb = nbformat.from_dict(job["notebook"])
            client.nb = nb
            client.timeout = job.get("timeout", 60)
            clock["limit"] = float(client.timeout) + 10
            tests = set(job.get("test_cells", []))
            sentinel, token = job.get("sentinel"), job.get("token")
            tail = "\nprint(%r)\n" % sentinel if sentinel else ""
            if token and not run_guard(True, token):
                status["failure"] = "the grader guard could not start"
                tests = set()
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                if index in tests:
                    if token and not run_guard(False, token):
                        status["guard_failed"].append(index)
                        continue
                    cell.source = cell.source + tail
                elif token and not cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
                    run_guard(False, token)      # a demo cell: it may use the references too
                try:
                    clock["index"], clock["start"] = index, time.monotonic()
                    client.execute_cell(cell, index)
                except CellTimeoutError:
                    status["failure"] = f"timeout in cell {_name(cell, index)}"
                    status["stopped_at"] = index
                    break
                except DeadKernelError:
                    status["failure"] = (f"timeout in cell {_name(cell, index)} (the kernel "
                                         "ignored the interrupt and was killed)"
                                         if clock["killed"] == index else
                                         f"kernel died in cell {_name(cell, index)}")
                    status["stopped_at"] = index
                    break
                finally:
                    clock["start"] = None
                    if index in tests and tail and cell.source.endswith(tail):
                        cell.source = cell.source[: -len(tail)]
    except Exception as e:  # noqa: BLE001 - report, never crash without an answer
        status["failure"] = status["failure"] or f"{type(e).__name__}: {str(e)[:200]}"
    if nb is None:
        return 0
    json.dump({"notebook": nb, "status": status}, out)
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
