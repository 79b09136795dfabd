"""Frames: a 4-byte big-endian length, then that many bytes of JSON.

The same frames go between the parent and the judge (pipes: `send_frame`/`recv_frame`), between
the judge and the forker (a socket that also carries fds: `send_msg`/`recv_msg`), and between
the judge and one program (its RPC socket; the judge reads those with a deadline, in `channel`).
"""

import json
import os
import socket
import struct

from .codec import _dumps

HDR = struct.Struct(">I")


def write_all(fd, data):
    mv = memoryview(data)
    while mv:
        n = os.write(fd, mv)
        mv = mv[n:]


def _read_exact(fd, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def send_frame(fd, obj):
    data = _dumps(obj).encode()
    write_all(fd, HDR.pack(len(data)) + data)


def recv_frame(fd):
    hdr = _read_exact(fd, 4)
    if hdr is None:
        return None
    (n,) = HDR.unpack(hdr)
    body = _read_exact(fd, n)
    return None if body is None else json.loads(body)


def send_msg(sock, obj, fds=()):
    data = _dumps(obj).encode()
    hdr = HDR.pack(len(data))
    if fds:
        socket.send_fds(sock, [hdr], list(fds))
    else:
        sock.sendall(hdr)
    sock.sendall(data)


def recv_msg(sock):
    """(obj, fds) from a stream socket; (None, []) on EOF."""
    hdr, fds, _flags, _addr = socket.recv_fds(sock, 4, 8)
    if not hdr:
        return None, fds
    while len(hdr) < 4:
        more = sock.recv(4 - len(hdr))
        if not more:
            return None, fds
        hdr += more
    (n,) = HDR.unpack(hdr)
    body = bytearray()
    while len(body) < n:
        chunk = sock.recv(min(n - len(body), 1 << 20))
        if not chunk:
            return None, fds
        body += chunk
    return json.loads(body), fds
