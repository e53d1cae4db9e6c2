"""The pipe under the channel: one length-prefixed JSON message at a time over two file descriptors.

``Pipe.frame`` checks a message before anything is written (JSON can write it, it is not over
``MAX_MESSAGE``), so a reply that cannot be sent fails one request, never the process;
``Pipe.recv`` refuses a malformed or oversized message and waits at most until its deadline.
The errors here are ``BaseException``s: a test's ``except Exception`` cannot swallow them.

Lecture connection: none; this is the grader's machinery (see ``autograder/README.md``).
"""
from __future__ import annotations

import json
import os
import select
import struct
import time

from .mirror import NotPlainData

MAX_MESSAGE = 64 * 1024 * 1024     # bytes; a larger message is refused before it is written
_HEADER = struct.Struct(">I")


class ChannelError(BaseException):
    """The other side is gone, too slow, or broke the protocol (not catchable by ``except
    Exception`` in a test, so a test cannot mistake it for an answer's exception)."""


class ChannelTimeout(ChannelError):
    pass


class AnswerInterrupted(ChannelError):
    """The other side did not reply in time, was interrupted (as a kernel is on a timeout) and
    then replied: the request failed, the link still works.  ``reply`` is that late reply."""

    def __init__(self, message, reply=None):
        super().__init__(message)
        self.reply = reply or {}


class Framed:
    """A message already checked and written as bytes (``Pipe.frame``)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data


class Pipe:
    """One message at a time over a pair of file descriptors."""

    def __init__(self, rfd: int, wfd: int):
        self.rfd, self.wfd = rfd, wfd
        self.closed = False
        self.buffer = bytearray()

    @staticmethod
    def text(obj) -> str:
        """``obj`` as the JSON text a message carries (ASCII: a lone surrogate in a string is
        written as an escape, so encoding can never fail later)."""
        try:
            return json.dumps(obj, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError) as e:
            raise NotPlainData(f"a value JSON cannot write ({type(e).__name__}: "
                               f"{str(e)[:200]})") from None

    def frame(self, obj) -> Framed:
        """``obj`` checked and written: ``NotPlainData`` if JSON cannot write it or it is too
        large to send (nothing is sent then)."""
        text = self.text(obj)
        if len(text) > MAX_MESSAGE:
            raise NotPlainData(f"too large to pass: {len(text):,} bytes (at most "
                               f"{MAX_MESSAGE:,} cross in one message)")
        return Framed(_HEADER.pack(len(text)) + text.encode("ascii"))

    def send(self, obj) -> None:
        if self.closed:
            raise ChannelError("the channel is closed")
        data = obj.data if isinstance(obj, Framed) else self.frame(obj).data
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.wfd, view):]
        except OSError as e:
            self.closed = True
            raise ChannelError(f"the other process is gone ({e.strerror})") from None

    def _read(self, n: int, deadline):
        buf = self.buffer
        while len(buf) < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.rfd], [], [], left)[0]:
                    raise ChannelTimeout("time limit")
            try:
                chunk = os.read(self.rfd, max(n - len(buf), 1 << 16))
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                raise ChannelError("the other process ended")
            buf += chunk
        out = bytes(buf[:n])
        del buf[:n]
        return out

    def recv(self, deadline=None):
        if self.closed:
            raise ChannelError("the channel is closed")
        (size,) = _HEADER.unpack(self._read(_HEADER.size, deadline))
        if size > MAX_MESSAGE:
            self.closed = True
            raise ChannelError(f"a message of {size} bytes is over the limit")
        try:
            msg = json.loads(self._read(size, deadline).decode("utf-8"))
        except (ValueError, RecursionError) as e:
            self.closed = True
            raise ChannelError(f"a malformed message ({type(e).__name__})") from None
        if not isinstance(msg, dict):
            self.closed = True
            raise ChannelError("a malformed message")
        return msg
