#!/usr/bin/env python3
"""Reads a whole Kafka topic with confluent-kafka, a client outside the project, and prints one
JSON line per message: {"partition", "offset", "key", "value"} (value parsed as JSON).

    read_topic.py BROKERS TOPIC

Reads every partition from its beginning up to the high watermark it has when the read starts.
"""
import json
import sys

from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING

brokers, topic = sys.argv[1], sys.argv[2]
consumer = Consumer({
    "bootstrap.servers": brokers,
    "group.id": "outside-reader",
    "enable.auto.commit": False,
})
partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
ends = {}
for p in partitions:
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
    if high > low:
        ends[p] = high
consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
done = set()
idle = 0
while len(done) < len(ends) and idle < 40:
    message = consumer.poll(0.5)
    if message is None:
        idle += 1
        continue
    if message.error():
        print(message.error(), file=sys.stderr)
        continue
    idle = 0
    print(json.dumps({
        "partition": message.partition(),
        "offset": message.offset(),
        "key": message.key().decode(),
        "value": json.loads(message.value()),
    }))
    if message.offset() + 1 >= ends[message.partition()]:
        done.add(message.partition())
consumer.close()
if len(done) < len(ends):
    sys.exit(f"read stopped before the end of partitions {sorted(set(ends) - done)}")
