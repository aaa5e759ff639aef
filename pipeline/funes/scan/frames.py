"""Length-prefixed pickle frames over a pipe: how the parent and its scan worker talk (`remote`, `worker`).

One frame is an 8-byte big-endian length, then that many bytes of a protocol-5 pickle. Both ends
are the same funes code started by the same user, so pickle is trusted here; what it decodes to
is still checked by the reader (`remote` validates every span it gets back).
"""

from __future__ import annotations

import pickle
import struct
from typing import IO, Any

_LEN = struct.Struct(">Q")
MAX_FRAME = 1 << 36  # a length past this is garbage, not a batch (a flush is tens of MB)


class Closed(Exception):
    """The other end closed the pipe (EOF) before or inside a frame."""


def encode(obj: Any) -> tuple[bytes, bytes]:
    """(length header, body) of one frame: a sender may encode here and write elsewhere."""
    data = pickle.dumps(obj, protocol=5)
    return _LEN.pack(len(data)), data


def write(out: IO[bytes], obj: Any) -> None:
    send(out, encode(obj))


def send(out: IO[bytes], frame: tuple[bytes, bytes]) -> None:
    out.write(frame[0])
    out.write(frame[1])
    out.flush()


def read(src: IO[bytes]) -> Any:
    """The next frame's object; Closed at EOF; ValueError when the frame is not a pickle."""
    head = _exactly(src, _LEN.size)
    (n,) = _LEN.unpack(head)
    if n > MAX_FRAME:
        raise ValueError(f"frame of {n} bytes")
    body = _exactly(src, n)
    try:
        return pickle.loads(body)
    except Exception as e:  # any unpickling failure is garbage on the pipe
        raise ValueError(f"frame is not a pickle ({type(e).__name__})") from None


def _exactly(src: IO[bytes], n: int) -> bytes:
    data = src.read(n)
    if data is None or len(data) < n:
        raise Closed
    return data
