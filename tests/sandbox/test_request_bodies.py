"""One shape of defence for request bodies: a null where the schema has a non-nullable array or
string closes the connection before any handler sees the request, as Kafka does ("non-nullable
field topics was serialized as null": InvalidRequestException, the socket closed); and a flood
of such requests from one client is logged once, with a count."""

from __future__ import annotations

import asyncio
import logging
import socket
import time

import pytest

from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.sandbox import apis, handlers
from kafka_shell.sandbox.listeners import ClosedConnections
from kafka_shell.sandbox.server import Sandbox
from tests import frame_fuzz
from tests.sandbox.test_fuzz import assert_serving

LISTED = frame_fuzz.non_nullable_paths
WINDOW_S = ClosedConnections.WINDOW_S


def _cases() -> list[tuple[int, int, tuple[str, ...]]]:
    handlers.load()
    return [(key, version, path) for key, api in sorted(handlers.HANDLERS.items()) for version in api.versions
            for path in LISTED(codec.request_schema(key, version))]


async def _outcome(host: str, port: int, frame: bytes) -> str:
    """"closed" when the broker closes the connection without an answer, else "answered"."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(frame)
        first = await asyncio.wait_for(reader.read(4), 10)
        return "answered" if first else "closed"
    except (ConnectionError, TimeoutError):
        return "closed"
    finally:
        writer.transport.abort()


def _outcomes(address: tuple[str, int], frames: list[bytes]) -> list[str]:
    async def run() -> list[str]:
        gate = asyncio.Semaphore(32)

        async def one(frame: bytes) -> str:
            async with gate:
                return await _outcome(*address, frame)
        return await asyncio.gather(*(one(f) for f in frames))
    return asyncio.run(run())


def test_a_null_the_schema_forbids_closes_the_connection_before_any_handler(caplog):
    cases = _cases()
    assert len(cases) > 500  # every API and version the sandbox serves, every such field
    caplog.set_level(logging.INFO, logger="kafka_shell.sandbox")
    with Sandbox(brokers=1) as s:
        start = time.monotonic()
        outcomes = _outcomes(s.address(1), [codec.frame(frame_fuzz.null_request(*c)) for c in cases])
        seconds = time.monotonic() - start
        answered = [c for c, o in zip(cases, outcomes) if o != "closed"]
        assert not answered, f"{len(answered)} answered, e.g. {answered[:5]}"
        assert_serving(s, caplog)  # and no handler failed on any of them (no ERROR line)
        # The same requests without the null are served (the nulls made the difference): those of
        # the versions a 4.4 broker lists (older ones are refused whole, as KIP-896 made them), but
        # Produce (its acks=0 has no answer).
        listed = apis.listed("4.4", "broker", False, handlers.HANDLERS)
        valid = sorted({(k, v) for k, v, _ in cases if v in listed.get(k, range(0)) and k != ApiKey.PRODUCE})
        served = _outcomes(s.address(1), [codec.frame(frame_fuzz.null_request(k, v)) for k, v in valid[:60]])
        assert served == ["answered"] * len(valid[:60]), [kv for kv, o in zip(valid, served) if o != "answered"]
    # Thousands of refusals from one client, each its connection closed: a line a second, with counts.
    closes = [r.getMessage() for r in caplog.records if "closes" in r.getMessage()]
    assert 1 <= len(closes) <= 2 + seconds / WINDOW_S, closes[:20]
    assert any("more like it" in line for line in closes), closes


NULLS_OF_THE_ISSUE = [  # api key, version, the null field: the four that raised TypeError in a handler
    (2, 1, ("topics",)), (1, 4, ("topics",)), (0, 3, ("topic_data",)), (20, 1, ("topic_names",)),
]


def _answer(address: tuple[str, int], body: bytes) -> str:
    """"closed" (without an answer), "answered", or "silent" (acks=0: neither within 3 s)."""
    with socket.create_connection(address, timeout=3) as sock:
        sock.sendall(codec.frame(body))
        try:
            return "answered" if sock.recv(4) else "closed"
        except ConnectionResetError:
            return "closed"
        except TimeoutError:
            return "silent"


@pytest.mark.parametrize("key, version, path", NULLS_OF_THE_ISSUE, ids=["ListOffsets-v1", "Fetch-v4", "Produce-v3",
                                                                       "DeleteTopics-v1"])
def test_the_issues_nulls_close_the_connection_like_kafka(kafka4, sandbox, key, version, path):
    body = frame_fuzz.null_request(key, version, path)
    host, _, port = kafka4.bootstrap.split(",")[0].rpartition(":")
    assert _answer((host, int(port)), body) == "closed"  # what Kafka 4 does
    assert _answer(sandbox.address(1), body) == "closed"
    # Without the null, both do the same again: answer (Produce v3 here, acks=0 to an unknown
    # topic, closes again: a failed acks=0 produce is told so).
    valid = frame_fuzz.null_request(key, version)
    assert _answer((host, int(port)), valid) == _answer(sandbox.address(1), valid)


def test_one_clients_repeated_errors_are_logged_once_with_a_count(caplog):
    caplog.set_level(logging.INFO, logger="kafka_shell.sandbox")
    body = codec.frame(frame_fuzz.null_request(2, 1, ("topics",)))
    with Sandbox(brokers=1) as s:
        start = time.monotonic()
        outcomes = _outcomes(s.address(1), [body] * 2000)
        seconds = time.monotonic() - start
        assert set(outcomes) == {"closed"}
        assert_serving(s, caplog)
    lines = [r.getMessage() for r in caplog.records if "closes" in r.getMessage()]
    assert lines[0].startswith("broker 1 closes a connection from 127.0.0.1: cannot decode ListOffsets v1")
    assert len(lines) <= 2 + seconds / WINDOW_S, lines  # the first, then one line a second at most
    counted = sum(int(line.split(" ")[line.split(" ").index("more") - 1]) for line in lines[1:])
    assert counted == 1999, lines
