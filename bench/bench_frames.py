"""What frame validation costs: decoding a Metadata v12 answer of 100,000 partitions (1,000
topics x 100, three replicas each), by kio alone and validated first (`protocol.decode_response`).

Run: .venv/bin/python bench/bench_frames.py [--topics N] [--partitions P]
Prints the medians of each and their ratio (GC paused while decoding, as the shell does).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import uuid

from kafka_shell.protocol import codec, frames
from kafka_shell.protocol.codes import ApiKey


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=100)
    args = parser.parse_args()
    cls = codec.response_schema(ApiKey.METADATA, 12)
    topics = [{"name": f"topic-{t:05d}", "topic_id": uuid.uuid4(), "partitions": [
        {"partition_index": p, "leader_id": p % 3 + 1, "replica_nodes": [1, 2, 3], "isr_nodes": [1, 2, 3]}
        for p in range(args.partitions)]} for t in range(args.topics)]
    answer = codec.build(cls, {"brokers": [{"node_id": i, "host": "127.0.0.1", "port": 9091 + i}
                                              for i in (1, 2, 3)],
                                  "cluster_id": "bench", "controller_id": 1, "topics": topics})
    body = codec.encode_response(answer, 1)[4:]
    reader_header, reader = codec._reader(cls.__header_schema__), codec._reader(cls)

    def kio_alone() -> None:
        _, used = reader_header(body, 0)
        reader(body, used)

    def validation_alone() -> None:
        frames.check(cls, body, frames.check(cls.__header_schema__, body, 0))

    def validated_decode() -> None:
        codec.decode_response(cls, body)

    figures = {}
    for name, fn in (("kio alone", kio_alone), ("validation alone", validation_alone),
                     ("validated decode", validated_decode)):
        times = []
        for _ in range(15):
            gc.collect()
            gc.disable()  # as ConnectionManager.refresh() decodes: GC paused
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
            gc.enable()
        figures[name] = statistics.median(times)
    partitions = args.topics * args.partitions
    print(f"Metadata v12, {partitions:,} partitions, {len(body) / 1e6:.1f} MB")
    for name, seconds in figures.items():
        print(f"  {name:18} {seconds * 1000:7.1f} ms")
    print(f"  validated / kio alone: {figures['validated decode'] / figures['kio alone']:.2f}")


if __name__ == "__main__":
    main()
