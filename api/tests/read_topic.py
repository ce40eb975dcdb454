#!/usr/bin/env python3
"""Reads a Kafka topic with confluent-kafka, a client outside the project, and prints one JSON
line per message: {"partition", "offset", "key", "value"} (value parsed as JSON).

    read_topic.py BROKERS TOPIC EXPECTED

Reads every partition from its beginning until it has seen EXPECTED distinct event ids and
then nothing new for a second (so duplicates behind them are read too), or until nothing has
come for ten seconds. It does not stop at the partitions' high watermarks: tansu 0.6 (nisshi's
former name) reported them too low once a producer batched several records.
"""
import json
import sys
import time

from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING

brokers, topic, expected = sys.argv[1], sys.argv[2], int(sys.argv[3])
consumer = Consumer({
    "bootstrap.servers": brokers,
    "group.id": "outside-reader",
    "enable.auto.commit": False,
})
partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
seen = set()
last = time.monotonic()
while True:
    quiet = time.monotonic() - last
    if quiet > 10 or (len(seen) >= expected and quiet > 1):
        break
    message = consumer.poll(0.2)
    if message is None:
        continue
    if message.error():
        print(message.error(), file=sys.stderr)
        continue
    last = time.monotonic()
    value = json.loads(message.value())
    seen.add(value["event_id"])
    print(json.dumps({
        "partition": message.partition(),
        "offset": message.offset(),
        "key": message.key().decode(),
        "value": value,
    }))
consumer.close()
