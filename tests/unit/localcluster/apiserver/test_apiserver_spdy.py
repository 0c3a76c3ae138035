"""SPDY/3 frames: what client-go's spdystream writes (golden bytes from its framer, vendored at the
pinned source) is read back, and what the writer produces reads back the same (one compression
context per direction, so several header blocks in a row)."""

from __future__ import annotations

import struct

import pytest

from nrop.localcluster.apiserver.wire import spdy

# spdystream's Framer (vendor/github.com/moby/spdystream/spdy, Go 1.27) writing, in this order on one
# connection: SYN_STREAM 1 {streamType: error}, SYN_STREAM 3 {streamType: stdin}, DATA 3 "hi" FIN,
# PING 1, GOAWAY 0, RST_STREAM 5 CANCEL.
GO_CLIENT = (
    "800300010000002a0000000100000000000078f9e3c6a7c26260606004a7b392a2d4c45c6851c29a5a54945f04000000ffff"
    "800300010000001700000003000000000000c22e555c92929907000000ffff"
    "00000003010000026869"
    "800300060000000400000001"
    "80030007000000080000000000000000"
    "80030003000000080000000500000005"
)
# ... and a server's framer writing SYN_REPLY 1 with no headers.
GO_REPLY = "80030002000000140000000178f9e3c6a7c26260606000000000ffff"


def test_the_dictionary_is_spdy3s() -> None:
    assert len(spdy.DICTIONARY) == 1423
    assert spdy.DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert spdy.DICTIONARY.endswith(b"charset=iso-8859-1,utf-,*,enq=0.")


def test_reads_what_client_go_writes() -> None:
    assert spdy.Reader().feed(bytes.fromhex(GO_CLIENT)) == [
        spdy.SynStream(1, {"streamtype": ["error"]}),
        spdy.SynStream(3, {"streamtype": ["stdin"]}),
        spdy.Data(3, b"hi", fin=True),
        spdy.Ping(1),
        spdy.GoAway(0, 0),
        spdy.RstStream(5, 5),
    ]
    assert spdy.Reader().feed(bytes.fromhex(GO_REPLY)) == [spdy.SynReply(1, {})]


def test_frames_split_anywhere_arrive_whole() -> None:
    data = bytes.fromhex(GO_CLIENT)
    reader = spdy.Reader()
    frames = []
    for start in range(0, len(data), 3):
        frames += reader.feed(data[start : start + 3])
    assert frames == spdy.Reader().feed(data)


def test_what_the_writer_writes_reads_back() -> None:
    writer, reader = spdy.Writer(), spdy.Reader()
    wire = (
        writer.syn_reply(1)
        + writer.syn_reply(3, {"X-Stream-Protocol-Version": ["v4.channel.k8s.io"], "a": ["b", "c"]})
        + writer.syn_stream(2, {"streamType": ["error"]}, fin=True)
        + writer.data(1, b'{"status":"Success"}')
        + writer.data(1, b"", fin=True)
        + spdy.Writer.ping(2)
        + spdy.Writer.goaway(3)
        + spdy.Writer.rst_stream(3, 5)
    )
    assert reader.feed(wire) == [
        spdy.SynReply(1, {}),
        spdy.SynReply(3, {"x-stream-protocol-version": ["v4.channel.k8s.io"], "a": ["b", "c"]}),
        spdy.SynStream(2, {"streamtype": ["error"]}, fin=True),
        spdy.Data(1, b'{"status":"Success"}'),
        spdy.Data(1, b"", fin=True),
        spdy.Ping(2),
        spdy.GoAway(3, 0),
        spdy.RstStream(3, 5),
    ]


def test_header_lookup_ignores_case() -> None:
    frame = spdy.Reader().feed(bytes.fromhex(GO_CLIENT))[0]
    assert isinstance(frame, spdy.SynStream)
    assert (frame.header("streamType"), frame.header("missing")) == ("error", "")


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        pytest.param(struct.pack(">HHI", 0x8003, 42, 0), "unknown control frame type 42", id="unknown-type"),
        pytest.param(
            struct.pack(">HHI", 0x8003, 6, 2) + b"\0\0", "control frame type 6 too short", id="short-ping"
        ),
        pytest.param(struct.pack(">II", 0, 1) + b"x", "data frame on stream 0", id="stream-zero"),
        pytest.param(
            struct.pack(">HHI", 0x8003, 2, 8) + b"\0\0\0\1garb",
            "header block does not decompress",
            id="not-zlib",
        ),
    ],
)
def test_malformed_frames(wire: bytes, message: str) -> None:
    with pytest.raises(spdy.FrameError, match=message):
        spdy.Reader().feed(wire)


def test_settings_and_window_updates_are_ignored() -> None:
    settings = struct.pack(">HHII", 0x8003, 4, 4, 0)
    window = struct.pack(">HHIII", 0x8003, 9, 8, 1, 1000)
    assert spdy.Reader().feed(settings + window) == [spdy.Ignored(4), spdy.Ignored(9)]
