"""SPDY/3 frames, as client-go speaks them for ``pods/exec`` (``remotecommand.NewSPDYExecutor``,
over ``github.com/moby/spdystream``), read and written.

A frame is 8 bytes of header and a payload. A *control* frame (first bit set) carries the
version (3), its type and 8 bits of flags with a 24-bit length; a *data* frame carries a 31-bit
stream id, flags and length. The types read here: SYN_STREAM (a new stream, with its headers),
SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE; data frames. Flags:
``FIN`` (the sender's last frame on the stream) and, on SYN_STREAM, ``UNIDIRECTIONAL``.

Header blocks (SYN_STREAM, SYN_REPLY, HEADERS) are a 32-bit count, then each name and value
with a 32-bit length (names lower-case, several values joined by NUL), compressed with zlib
and the SPDY/3 dictionary (:data:`DICTIONARY`) in one stream per direction of the connection,
each block ending with a sync flush. That is why :class:`Reader` and :class:`Writer` hold
state: one of each per connection.

spdystream does no flow control (WINDOW_UPDATE and SETTINGS are read and ignored) and neither
does this. Pure: bytes in, frames out; frames in, bytes out.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "DICTIONARY",
    "FLAG_FIN",
    "FLAG_UNIDIRECTIONAL",
    "MAX_PAYLOAD",
    "VERSION",
    "Data",
    "Frame",
    "FrameError",
    "GoAway",
    "Headers",
    "Ignored",
    "Ping",
    "Reader",
    "RstStream",
    "SynReply",
    "SynStream",
    "Writer",
]

VERSION = 3
FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02
_SYN_STREAM = 1
_SYN_REPLY = 2
_RST_STREAM = 3
_SETTINGS = 4
_PING = 6
_GOAWAY = 7
_HEADERS = 8
_WINDOW_UPDATE = 9
#: The largest payload a frame can carry (24-bit length).
MAX_PAYLOAD = (1 << 24) - 1

#: The dictionary's words, each written with its 32-bit length, separated by ``|`` here.
_DICTIONARY_WORDS = (
    "options|head|post|put|delete|trace|accept|accept-charset|accept-encoding|accept-language|"
    "accept-ranges|age|allow|authorization|cache-control|connection|content-base|content-encoding|"
    "content-language|content-length|content-location|content-md5|content-range|content-type|date|"
    "etag|expect|expires|from|host|if-match|if-modified-since|if-none-match|if-range|"
    "if-unmodified-since|last-modified|location|max-forwards|pragma|proxy-authenticate|"
    "proxy-authorization|range|referer|retry-after|server|te|trailer|transfer-encoding|upgrade|"
    "user-agent|vary|via|warning|www-authenticate|method|get|status|200 OK|version|HTTP/1.1|url|"
    "public|set-cookie|keep-alive|origin"
)
#: ... followed by these bytes as they are.
_DICTIONARY_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
#: The zlib dictionary of SPDY/3 header blocks (draft-mbelshe-httpbis-spdy-00, section 2.6.10.1).
DICTIONARY = (
    b"".join(struct.pack(">I", len(word)) + word.encode() for word in _DICTIONARY_WORDS.split("|"))
    + _DICTIONARY_TAIL.encode()
)

HeaderBlock = Mapping[str, Sequence[str]]


class FrameError(Exception):
    """Bytes that are not SPDY/3 as spdystream writes it; the connection cannot go on."""


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    headers: HeaderBlock
    associated_to: int = 0
    priority: int = 0
    fin: bool = False
    unidirectional: bool = False

    def header(self, name: str) -> str:
        """The first value of header ``name`` (any case), or ``""``."""
        return next(iter(self.headers.get(name.lower(), ())), "")


@dataclass(frozen=True)
class SynReply:
    stream_id: int
    headers: HeaderBlock = field(default_factory=dict)
    fin: bool = False


@dataclass(frozen=True)
class Headers:
    stream_id: int
    headers: HeaderBlock
    fin: bool = False


@dataclass(frozen=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True)
class Ping:
    ping_id: int


@dataclass(frozen=True)
class GoAway:
    last_good_stream_id: int
    status: int = 0


@dataclass(frozen=True)
class Data:
    stream_id: int
    data: bytes
    fin: bool = False


@dataclass(frozen=True)
class Ignored:
    """SETTINGS and WINDOW_UPDATE: read, not acted on (spdystream has no flow control)."""

    kind: int


Frame = SynStream | SynReply | Headers | RstStream | Ping | GoAway | Data | Ignored


def _parse_headers(block: bytes) -> dict[str, list[str]]:
    try:
        (count,) = struct.unpack_from(">I", block, 0)
        offset = 4
        headers: dict[str, list[str]] = {}
        for _ in range(count):
            (length,) = struct.unpack_from(">I", block, offset)
            name = block[offset + 4 : offset + 4 + length].decode().lower()
            offset += 4 + length
            (length,) = struct.unpack_from(">I", block, offset)
            value = block[offset + 4 : offset + 4 + length].decode()
            offset += 4 + length
            headers.setdefault(name, []).extend(value.split("\x00"))
    except (struct.error, UnicodeDecodeError) as exc:
        raise FrameError(f"malformed header block: {exc}") from None
    if offset != len(block):
        raise FrameError("malformed header block: trailing bytes")
    return headers


def _header_block(headers: HeaderBlock) -> bytes:
    out = [struct.pack(">I", len(headers))]
    for name, values in headers.items():
        key = name.lower().encode()
        value = "\x00".join(values).encode()
        out += [struct.pack(">I", len(key)), key, struct.pack(">I", len(value)), value]
    return b"".join(out)


class Reader:
    """Frames from the bytes of one direction of a connection, as they arrive."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)

    def feed(self, data: bytes) -> list[Frame]:
        """The frames ``data`` completes (a frame split across calls waits for its end)."""
        self._buffer += data
        frames: list[Frame] = []
        while len(self._buffer) >= 8:
            (length,) = struct.unpack_from(">I", self._buffer, 4)
            end = 8 + (length & 0xFFFFFF)
            if len(self._buffer) < end:
                break
            frame = bytes(self._buffer[:end])
            del self._buffer[:end]
            frames.append(self._frame(frame))
        return frames

    def _headers(self, compressed: bytes) -> dict[str, list[str]]:
        try:
            return _parse_headers(self._inflate.decompress(compressed))
        except zlib.error as exc:
            raise FrameError(f"header block does not decompress: {exc}") from None

    def _frame(self, frame: bytes) -> Frame:
        first, flags_length = struct.unpack_from(">II", frame, 0)
        flags, payload = flags_length >> 24, frame[8:]
        if not first & 0x80000000:
            stream_id = first & 0x7FFFFFFF
            if not stream_id:
                raise FrameError("data frame on stream 0")
            return Data(stream_id, payload, bool(flags & FLAG_FIN))
        kind = first & 0xFFFF
        fin = bool(flags & FLAG_FIN)
        try:
            if kind == _SYN_STREAM:
                stream_id, associated = struct.unpack_from(">II", payload, 0)
                return SynStream(
                    stream_id & 0x7FFFFFFF,
                    self._headers(payload[10:]),
                    associated & 0x7FFFFFFF,
                    payload[8] >> 5,
                    fin,
                    bool(flags & FLAG_UNIDIRECTIONAL),
                )
            if kind in (_SYN_REPLY, _HEADERS):
                (stream_id,) = struct.unpack_from(">I", payload, 0)
                block = self._headers(payload[4:])
                if kind == _SYN_REPLY:
                    return SynReply(stream_id & 0x7FFFFFFF, block, fin)
                return Headers(stream_id & 0x7FFFFFFF, block, fin)
            if kind == _RST_STREAM:
                stream_id, status = struct.unpack_from(">II", payload, 0)
                return RstStream(stream_id & 0x7FFFFFFF, status)
            if kind == _PING:
                return Ping(struct.unpack_from(">I", payload, 0)[0])
            if kind == _GOAWAY:
                last, status = struct.unpack_from(">II", payload, 0)
                return GoAway(last & 0x7FFFFFFF, status)
        except struct.error as exc:
            raise FrameError(f"control frame type {kind} too short: {exc}") from None
        if kind in (_SETTINGS, _WINDOW_UPDATE):
            return Ignored(kind)
        raise FrameError(f"unknown control frame type {kind}")


class Writer:
    """The bytes of frames for one direction of a connection."""

    def __init__(self) -> None:
        self._deflate = zlib.compressobj(level=9, zdict=DICTIONARY)

    def _compress(self, headers: HeaderBlock) -> bytes:
        return self._deflate.compress(_header_block(headers)) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    @staticmethod
    def _control(kind: int, flags: int, payload: bytes) -> bytes:
        if len(payload) > MAX_PAYLOAD:
            raise FrameError(f"control frame payload of {len(payload)} bytes")
        return struct.pack(">HHI", 0x8000 | VERSION, kind, flags << 24 | len(payload)) + payload

    def syn_stream(self, stream_id: int, headers: HeaderBlock, *, fin: bool = False) -> bytes:
        payload = struct.pack(">IIBB", stream_id, 0, 0, 0) + self._compress(headers)
        return self._control(_SYN_STREAM, FLAG_FIN if fin else 0, payload)

    def syn_reply(self, stream_id: int, headers: HeaderBlock | None = None, *, fin: bool = False) -> bytes:
        payload = struct.pack(">I", stream_id) + self._compress(headers or {})
        return self._control(_SYN_REPLY, FLAG_FIN if fin else 0, payload)

    @classmethod
    def rst_stream(cls, stream_id: int, status: int) -> bytes:
        return cls._control(_RST_STREAM, 0, struct.pack(">II", stream_id, status))

    @classmethod
    def ping(cls, ping_id: int) -> bytes:
        return cls._control(_PING, 0, struct.pack(">I", ping_id))

    @classmethod
    def goaway(cls, last_good_stream_id: int, status: int = 0) -> bytes:
        return cls._control(_GOAWAY, 0, struct.pack(">II", last_good_stream_id, status))

    @staticmethod
    def data(stream_id: int, data: bytes, *, fin: bool = False) -> bytes:
        """One data frame (``data`` longer than :data:`MAX_PAYLOAD` is the caller's to split)."""
        if len(data) > MAX_PAYLOAD:
            raise FrameError(f"data frame payload of {len(data)} bytes")
        return struct.pack(">II", stream_id & 0x7FFFFFFF, (FLAG_FIN if fin else 0) << 24 | len(data)) + data
