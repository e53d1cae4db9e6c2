"""``python -m autograder class-server ROSTER.csv --model FILE.gguf``: one model for a class.

llama.cpp's own ``llama-server`` (``make setup`` installs it) serves the model; this command
gives each student a key of their own and starts it with them:

1. **The roster** is an LMS export (Canvas's gradebook, Moodle's participants, any CSV with a
   header), read as ``export --ids`` reads its mapping (``lms_columns``): the student is the first
   of the columns ``id``, ``sis_user_id``, ``sis_login_id``, ``username``, ``idnumber``,
   ``email``, ``submission`` that the header has; every row needs a value there, and no value
   of ``lms_columns.KEYS`` may belong to two rows.  Its cells are untrusted: they are written
   to CSV through ``safecsv`` and printed through ``safetext.shown``; a file that is not UTF-8
   text, too large, or without such a column is refused, saying what to fix.
2. **The keys** live in one folder (``--keys DIR``, default ``class-server/`` here; mode 0700,
   every file 0600): ``keys.json`` (which key is whose: read again on the next start, so a
   student keeps their key; a student no longer on the roster loses theirs; ``--new-key ID``
   replaces one), ``keys.csv`` (the roster's identity columns and ``API key``: the file you hand
   out, e.g. merged into an LMS export by its id column), ``api-keys.txt`` (one key a line, what
   ``llama-server --api-key-file`` reads) and ``instructor-key.txt`` (your own key, for
   ``check_setup()`` or a look at ``/metrics``).  No key is ever printed, logged or passed on a
   command line.
3. **The server**: ``llama-server`` with ``--api-key-file``, ``-np SLOTS`` and ``-c SLOTS*CTX``
   (each slot gets ``CTX`` tokens; ``--no-kv-unified``), ``-n MAX_TOKENS`` (the length of a
   reply that asks for none), ``--no-slots`` (``/slots`` would show every student which sampling
   settings the others use), ``--metrics``, ``--cache-ram`` 0 unless asked (the host prompt cache
   otherwise grows by megabytes per distinct prompt), ``OMP_WAIT_POLICY=passive`` (spinning
   OpenMP threads make a busy machine ten times slower), and no ``LLAMA_ARG_*`` variable of the
   caller's environment (``LLAMA_ARG_API_KEY`` would add a key).  Its log goes to
   ``DIR/llama-server.log``.  Only ``/health`` answers without a key.

It prints what it started and how students connect, then runs until Ctrl-C (or SIGTERM).
Stopping never hangs: llama-server, sent SIGTERM while it answers a request, waits for that
client to give up (measured: minutes), so after ``STOP_GRACE`` seconds it is killed; the
students' requests in flight then fail with a plain "stopped while answering".

What it does not do: budgets or rate limits per student (a key is a door, not a meter), TLS
unless you pass ``--tls-cert``/``--tls-key``, or more than one model.  README.md, "A class on one
model server", has the sizing table and what a campus puts in front for budgets.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .lms_columns import KEYS
from .lms_columns import field as column_field
from .safetext import shown

ROSTER_MAX_BYTES = 20 * 1024 * 1024
PRIMARY = ("id", "sis_user_id", "sis_login_id", "username", "idnumber", "email", "submission")
KEY_PREFIX = "lr-"          # a key never starts with a character a spreadsheet reads as formula
STOP_GRACE = 5.0            # seconds after SIGTERM before llama-server is killed
START_TIMEOUT = 600.0       # seconds to load the model and answer /health
DEFAULT_KEYS_DIR = Path("class-server")
SKIPPED_NAMES = ("points possible",)   # Canvas's gradebook export: the row of maxima


class ClassServerError(SystemExit):
    """Bad input or a server that would not start: the message says what to do."""

    def __init__(self, message: str):
        super().__init__(f"class-server: {message}")


# --- the roster ------------------------------------------------------------------------------

@dataclass
class Roster:
    path: Path
    primary: str                  # the field that names a student (``PRIMARY``)
    headers: list                 # [(the roster's own header text, its field)], identity only
    students: list = field(default_factory=list)   # [{field: value}], primary value non-empty
    skipped: int = 0              # blank rows, Canvas's "Points Possible"


def _delimiter(first_line: str) -> str:
    """The separator of a header line: ``,`` unless ``;`` or tab splits it into known fields
    (a spreadsheet in a German or French locale saves CSV with ``;``)."""
    best, known = ",", -1
    for sep in (",", ";", "\t"):
        names = {column_field(h) for h in next(csv.reader([first_line], delimiter=sep), [])}
        score = len(names & (set(PRIMARY) | {"name", "first_name", "last_name", "section"}))
        if score > known:
            best, known = sep, score
    return best


def read_roster(path) -> Roster:
    """The students of an LMS roster CSV (see the module docstring)."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError:
        raise ClassServerError(f"no roster file {path}") from None
    if not path.is_file():
        raise ClassServerError(f"{path} is not a file: give the roster CSV the LMS exported")
    if size > ROSTER_MAX_BYTES:
        raise ClassServerError(f"{path} has {size} bytes; a roster is at most "
                               f"{ROSTER_MAX_BYTES // 2**20} MB: export the class's students only")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ClassServerError(f"{path} is not UTF-8 text; save it as CSV (UTF-8)") from None
    if "\0" in text:
        raise ClassServerError(f"{path} holds NUL bytes: it is not a CSV file")
    sep = _delimiter(text.split("\n", 1)[0])
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=sep))
    except csv.Error as e:
        raise ClassServerError(f"{path} is not a readable CSV file ({e})") from None
    header = rows[0] if rows else []
    fields = [column_field(h) for h in header]
    primary = next((f for f in PRIMARY if f in fields), None)
    if primary is None:
        found = ", ".join(shown(h) for h in header) or "an empty file"
        raise ClassServerError(
            f"{path} needs a header with a column that names each student: one of "
            f"{', '.join(PRIMARY)} (an LMS export's own headers such as \"SIS Login ID\" or "
            f"\"Email address\" work); found: {found}")
    wanted = set(KEYS) | set(PRIMARY) | {"name", "first_name", "last_name", "section"}
    keep = [(i, h, f) for i, (h, f) in enumerate(zip(header, fields)) if f in wanted]
    twice = sorted({f for _, _, f in keep if [g for _, _, g in keep].count(f) > 1})
    if twice:
        raise ClassServerError(f"{path}: more than one column is read as {', '.join(twice)}; "
                               "keep one of each")
    roster = Roster(path, primary, [(h, f) for _, h, f in keep])
    owner = {}
    for line, row in enumerate(rows[1:], start=2):
        got = {f: (row[i].strip() if i < len(row) else "") for i, _, f in keep}
        if not any(got.values()) or (
                not got[primary] and got.get("name", "").strip().lower() in SKIPPED_NAMES):
            roster.skipped += 1
            continue
        if not got[primary]:
            raise ClassServerError(f"{path} line {line}: no {primary}; every student needs one "
                                   "(fill it in, or delete the row)")
        for key in {primary, *KEYS}:
            if got.get(key):
                other = owner.setdefault((key, got[key]), line)
                if other != line:
                    raise ClassServerError(
                        f"{path} lines {other} and {line} have the same {key} "
                        f"{shown(got[key])}: a key must belong to one student")
        roster.students.append(got)
    if not roster.students:
        raise ClassServerError(f"{path} names no student (a header and no rows with a "
                               f"{primary})")
    return roster


# --- the keys --------------------------------------------------------------------------------

def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(24)     # 192 bits; [A-Za-z0-9_-]


def _private_dir(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if not folder.is_dir():
        raise ClassServerError(f"--keys {folder} is not a folder")
    folder.chmod(0o700)
    return folder


@contextlib.contextmanager
def _private_file(path: Path, newline=None):
    """Write ``path`` as a new file of mode 0600, put in place when complete."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        with open(fd, "w", encoding="utf-8", newline=newline) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


@dataclass
class KeyChanges:
    kept: int = 0
    new: int = 0
    replaced: int = 0
    revoked: list = field(default_factory=list)    # students no longer on the roster


class KeyStore:
    """The key folder (module docstring, 2.)."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.state = self.folder / "keys.json"
        self.handout = self.folder / "keys.csv"
        self.key_file = self.folder / "api-keys.txt"
        self.instructor_file = self.folder / "instructor-key.txt"

    def _load(self) -> dict:
        if not self.state.exists():
            return {}
        try:
            data = json.loads(self.state.read_text(encoding="utf-8"))
            assert isinstance(data.get("students"), dict)
            assert all(isinstance(v, dict) and isinstance(v.get("key"), str)
                       for v in data["students"].values())
        except (ValueError, AssertionError, AttributeError):
            raise ClassServerError(f"{self.state} is not a key file this command wrote; move "
                                   "it away (its keys then stop working) or use another "
                                   "--keys folder") from None
        return data

    def update(self, roster: Roster, new_keys_for=()) -> KeyChanges:
        """Give every student of ``roster`` a key (keeping the ones they have) and write the
        folder's four files; returns what changed."""
        _private_dir(self.folder)
        old = self._load()
        if old and old.get("primary") != roster.primary:
            raise ClassServerError(
                f"{self.state} names students by {old.get('primary')}, this roster by "
                f"{roster.primary}: use the same LMS export as before, or a new --keys folder "
                "(every student then gets a new key)")
        before = old.get("students", {})
        names = [s[roster.primary] for s in roster.students]
        unknown = [x for x in new_keys_for if x not in names]
        if unknown:
            raise ClassServerError(f"--new-key {shown(unknown[0])}: no student with that "
                                   f"{roster.primary} on the roster")
        changes, students = KeyChanges(), {}
        for student in roster.students:
            who = student[roster.primary]
            if who in before and who not in new_keys_for:
                key, changes.kept = before[who]["key"], changes.kept + 1
            else:
                key = new_key()
                if who in before:
                    changes.replaced += 1
                else:
                    changes.new += 1
            students[who] = {"key": key, "fields": student}
        changes.revoked = sorted(set(before) - set(students))
        instructor = old.get("instructor") or new_key()
        with _private_file(self.state) as f:
            json.dump({"format": 1, "primary": roster.primary, "roster": str(roster.path),
                       "instructor": instructor, "students": students}, f, indent=1,
                      ensure_ascii=False)
        from .safecsv import Writer  # nbgrader comes with it: only when writing

        with _private_file(self.handout, newline="") as f:
            w = Writer(f)
            w.writerow([h for h, _ in roster.headers] + ["API key"])
            for entry in students.values():
                w.writerow([entry["fields"].get(f, "") for _, f in roster.headers]
                           + [entry["key"]])
        with _private_file(self.key_file, newline="\n") as f:   # no CR: it would be in the key
            f.write("".join(e["key"] + "\n" for e in students.values()) + instructor + "\n")
        with _private_file(self.instructor_file, newline="\n") as f:
            f.write(instructor + "\n")
        return changes

    def instructor_key(self) -> str:
        return self.instructor_file.read_text(encoding="utf-8").strip()


# --- llama-server ----------------------------------------------------------------------------

def find_llama_server() -> str | None:
    """``$LREACT_LLAMA_SERVER``, else ``llama-server`` in this Python's environment (where
    ``make setup`` puts it), else on ``PATH``; None when there is none."""
    own = os.environ.get("LREACT_LLAMA_SERVER", "").strip()
    if own and own.lower() not in ("off", "0", "no", "none"):
        return own if os.access(own, os.X_OK) else None
    here = Path(sys.prefix) / "bin" / "llama-server"
    if os.access(here, os.X_OK):
        return str(here)
    return shutil.which("llama-server")


def templates_dir(binary) -> Path:
    """The chat templates installed with the binary (``scripts/llama_server.py``)."""
    return Path(binary).resolve().parent.parent / "share" / "llama-server" / "templates"


def server_env() -> dict:
    """The caller's environment without what llama-server would read as its settings: every
    ``LLAMA_ARG_*`` and ``LLAMA_API_KEY`` (a key in no roster that ``--new-key`` could not
    revoke: outside review)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LLAMA_ARG_") and k != "LLAMA_API_KEY"}
    env.setdefault("OMP_WAIT_POLICY", "passive")
    return env


def port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        # as llama-server binds: a port whose old connections are still closing (TIME_WAIT
        # after a stop) is free, one something listens on is not
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def _dies_with_parent() -> None:
    """In the child before exec (Linux): SIGTERM when the process that started it ends, however
    it ends (a closed terminal, kill -9), so no llama-server is left serving the class's keys
    (outside review: after SIGHUP it kept answering)."""
    if sys.platform.startswith("linux"):
        import ctypes
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LlamaServer:
    """One ``llama-server`` process: started, ready (``/health`` 200), stopped without a hang.

    ``args`` are llama-server's own options beyond ``-m``, ``--host`` and ``--port``."""

    def __init__(self, model, args=(), *, host="127.0.0.1", port=None, log=None, binary=None,
                 start_timeout=START_TIMEOUT):
        self.binary = binary or find_llama_server()
        if self.binary is None:
            raise ClassServerError(
                "llama-server is not installed: `make setup` builds it (README, \"A class on "
                "one model server\"), or set LREACT_LLAMA_SERVER to a llama-server binary")
        self.model, self.args, self.host = str(model), [str(a) for a in args], host
        self.port = port or free_port(host if host not in ("0.0.0.0", "::") else "127.0.0.1")
        self.log = Path(log) if log else None
        self.start_timeout = start_timeout
        self.proc = None
        self.started_in = None

    @property
    def local(self) -> str:
        """Where this machine reaches it."""
        host = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(self.host, self.host)
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        return self.local + "/v1"

    def command(self) -> list:
        return [self.binary, "-m", self.model, "--host", self.host, "--port", str(self.port),
                *self.args]

    def log_tail(self, n=3000) -> str:
        if self.log is None or not self.log.exists():
            return ""
        return self.log.read_bytes()[-n:].decode("utf-8", "replace")

    def start(self):
        import httpx

        out = subprocess.DEVNULL
        if self.log:        # mode 0600 like the keys beside it
            out = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.fchmod(out, 0o600)
        start = time.monotonic()
        try:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=server_env(),
                                         start_new_session=True, preexec_fn=_dies_with_parent)
        finally:
            if self.log:
                os.close(out)
        deadline = start + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.proc = None
                raise ClassServerError(f"llama-server exited with {code} while starting; the "
                                       f"end of its log ({self.log}):\n{self.log_tail()}")
            try:
                if httpx.get(self.local + "/health", timeout=2).status_code == 200:
                    self.started_in = time.monotonic() - start
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise ClassServerError(f"llama-server did not answer /health within "
                               f"{self.start_timeout:g} s; the end of its log ({self.log}):\n"
                               f"{self.log_tail()}")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def rss_mib(self) -> float | None:
        """Its resident memory now (Linux), or None."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except (OSError, AttributeError, ValueError):
            pass
        return None

    def stop(self, grace: float = STOP_GRACE):
        """SIGTERM, then SIGKILL after ``grace`` seconds (a request in flight keeps a
        SIGTERMed llama-server alive until its client gives up)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                self.proc.wait(timeout=30)

    def kill(self):
        """SIGKILL at once, as a crash would end it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


# --- the command -----------------------------------------------------------------------------

@dataclass
class Settings:
    slots: int = 4
    ctx: int = 4096
    port: int = 8080
    host: str = "0.0.0.0"
    max_tokens: int = 1024
    threads: int | None = None
    http_threads: int | None = None
    cache_ram: int = 0
    gpu_layers: str | None = None
    chat_template_file: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    alias: str | None = None


def check_model(model) -> Path:
    path = Path(model).expanduser()
    if not path.is_file():
        raise ClassServerError(f"--model {model}: no such file (a .gguf model file)")
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise ClassServerError(f"--model {model} is not a GGUF model file (llama.cpp's "
                                   "format; Hugging Face repositories named ...-GGUF have them)")
    return path


def server_args(settings: Settings, model: Path, key_file: Path) -> list:
    s = settings
    args = ["--alias", s.alias or model.stem, "-np", s.slots, "-c", s.slots * s.ctx,
            "--no-kv-unified", "-n", s.max_tokens, "--api-key-file", key_file, "--no-slots",
            "--metrics", "--cache-ram", s.cache_ram,
            "--threads-http", s.http_threads or max(32, 4 * s.slots)]
    if s.threads:
        args += ["-t", s.threads]
    if s.gpu_layers is not None:
        args += ["-ngl", s.gpu_layers]
    if s.chat_template_file:
        args += ["--chat-template-file", s.chat_template_file]
    if s.tls_cert or s.tls_key:
        if not (s.tls_cert and s.tls_key):
            raise ClassServerError("--tls-cert and --tls-key go together (the certificate and "
                                   "its private key, PEM files)")
        args += ["--ssl-cert-file", s.tls_cert, "--ssl-key-file", s.tls_key]
    return [str(a) for a in args]


def reachable_address() -> str:
    """This machine's address on its outward network (no packet is sent), or its name."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))          # TEST-NET-1: routing only, nothing is sent
            return s.getsockname()[0]
        except OSError:
            return socket.gethostname()


class ClassServer:
    """The roster's keys written, then llama-server started with them (module docstring)."""

    def __init__(self, roster, model, *, keys_dir=DEFAULT_KEYS_DIR, settings=None,
                 new_keys_for=(), binary=None):
        self.settings = settings or Settings()
        s = self.settings
        for name, value, low, high in (("--slots", s.slots, 1, 512), ("--ctx", s.ctx, 256, 1 << 20),
                                       ("--port", s.port, 1, 65535),
                                       ("--max-tokens", s.max_tokens, 1, 1 << 20)):
            if not isinstance(value, int) or not low <= value <= high:
                raise ClassServerError(f"{name} {value}: must be a whole number from {low} "
                                       f"to {high}")
        if s.max_tokens > s.ctx:
            raise ClassServerError(f"--max-tokens {s.max_tokens} is more than a slot's context "
                                   f"(--ctx {s.ctx}): a reply must fit its slot")
        self.model = check_model(model)
        self.roster = read_roster(roster)
        self.keys = KeyStore(keys_dir)
        self.new_keys_for = tuple(new_keys_for)
        self.binary = binary
        self.server = None
        self.changes = None

    def start(self):
        s = self.settings
        if not port_free(s.host, s.port):
            raise ClassServerError(f"port {s.port} on {s.host} is in use (another server?) or "
                                   "not allowed: choose another with --port")
        self.changes = self.keys.update(self.roster, self.new_keys_for)
        self.server = LlamaServer(self.model, server_args(s, self.model, self.keys.key_file),
                                  host=s.host, port=s.port, binary=self.binary,
                                  log=self.keys.folder / "llama-server.log")
        self.server.start()
        return self

    def stop(self):
        if self.server is not None:
            self.server.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def props(self) -> dict:
        """What the running server says of itself (``/props``, with the instructor's key)."""
        import httpx

        try:
            answer = httpx.get(self.server.local + "/props", timeout=10, headers={
                "Authorization": f"Bearer {self.keys.instructor_key()}"})
            return answer.json() if answer.status_code == 200 else {}
        except (httpx.HTTPError, ValueError):
            return {}

    def summary(self) -> str:
        """What was started and how students connect (no key in it)."""
        s, c, server = self.settings, self.changes, self.server
        props = self.props()
        slots = props.get("total_slots", s.slots)
        per_slot = (props.get("default_generation_settings") or {}).get("n_ctx", s.ctx)
        host = reachable_address() if s.host in ("0.0.0.0", "::") else s.host
        scheme = "https" if s.tls_cert else "http"
        url = f"{scheme}://{host}:{s.port}/v1"
        rss = server.rss_mib()
        lines = [
            f"class-server: llama-server ({server.binary}) is serving {self.model.name} on "
            f"{s.host}:{s.port}, ready in {server.started_in:.1f} s",
            f"  {slots} slots (requests answered at once; more wait their turn), {per_slot} "
            f"tokens of context each, replies capped at {s.max_tokens} tokens unless a request "
            "asks for more" + (f"; memory now {rss:.0f} MiB" if rss else ""),
            f"  keys: {len(self.roster.students)} students ({c.kept} kept, {c.new} new, "
            f"{c.replaced} replaced" + (f", {len(c.revoked)} revoked: "
                                        + ", ".join(shown(x) for x in c.revoked[:10])
                                        + (" ..." if len(c.revoked) > 10 else "")
                                        if c.revoked else "") + ")"
            + (f"; {self.roster.skipped} roster row(s) without a student skipped"
               if self.roster.skipped else ""),
            f"  hand out {self.keys.handout.resolve()} (one key per student, by "
            f"{self.roster.primary}); each key in it is a secret: send each student only "
            "their own row",
            f"  your own key: {self.keys.instructor_file.resolve()}; "
            f"llama-server's log: {server.log}",
            "  students connect with (in the terminal before `jupyter lab`, or in the "
            "notebook's first cell via os.environ):",
            f"    export LREACT_BACKEND=openai LREACT_BASE_URL={url} LREACT_API_KEY=<their key>",
            "  and check with lreact.check_setup(). Ctrl-C stops the server.",
        ]
        if scheme == "http" and s.host not in ("127.0.0.1", "::1", "localhost"):
            lines.append("  note: plain HTTP: keys and prompts cross the network readable; "
                         "on a shared network use --tls-cert/--tls-key or a TLS proxy")
        return "\n".join(lines)

    def wait(self) -> int:
        """Run until Ctrl-C / SIGTERM / SIGHUP (0) or until llama-server ends by itself (1)."""
        stop = {"signal": None}

        def on_signal(signum, _frame):
            stop["signal"] = signum

        stops = (signal.SIGINT, signal.SIGTERM) + \
            ((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ())    # a closed terminal
        old = {sig: signal.signal(sig, on_signal) for sig in stops}
        try:
            while stop["signal"] is None and self.server.running():
                time.sleep(0.2)
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
        if stop["signal"] is None:
            print(f"class-server: llama-server ended by itself (exit "
                  f"{self.server.proc.returncode}); the end of its log:\n"
                  f"{self.server.log_tail()}", file=sys.stderr)
            return 1
        print("class-server: stopping llama-server (requests in flight are cut off)")
        self.stop()
        print("class-server: stopped")
        return 0


def command(roster, model, *, keys_dir=DEFAULT_KEYS_DIR, settings=None, new_keys_for=()) -> int:
    """The ``class-server`` command: keys, server, summary, then serve until stopped."""
    server = ClassServer(roster, model, keys_dir=keys_dir, settings=settings,
                         new_keys_for=new_keys_for)
    server.start()
    try:
        print(server.summary(), flush=True)
        return server.wait()
    finally:
        server.stop()
