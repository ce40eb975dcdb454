#!/usr/bin/env python3
"""The Stream-Framework baseline (PyPI stream-framework 1.4 with redis<3, its Redis backend):
fan out one activity to 5,000 followers' feeds, then read pages of 10 from a feed of 1,000.

    stream_framework_bench.py REDIS_URL     prints {"fanout_ms": ..., "page_p50_ms": ...}

It pushes on write, as Stream-Framework's managers do (here in-process, without celery, so the
figure is the library's own cost, not a task queue's).
"""
import json
import statistics
import sys
import time
from datetime import datetime, timedelta
from urllib.parse import urlparse

url = urlparse(sys.argv[1])
from stream_framework import settings  # noqa: E402

settings.STREAM_REDIS_CONFIG = {
    "default": {"host": url.hostname or "127.0.0.1", "port": url.port or 6379, "db": 0,
                "password": None},
}
from stream_framework.activity import Activity  # noqa: E402
from stream_framework.feeds.redis import RedisFeed  # noqa: E402
from stream_framework.verbs.base import Add  # noqa: E402


class BenchFeed(RedisFeed):
    key_format = "bench_sf_feed:%(user_id)s"
    max_length = 1000


def activity(i, when):
    return Activity(actor=1, verb=Add, object=i, time=when)


now = datetime.utcnow()
for follower in range(2, 5002):
    BenchFeed(follower).delete()
started = time.perf_counter()
post = activity(1, now)
BenchFeed.insert_activity(post)  # the activity's data, once, as the manager does
for follower in range(2, 5002):
    BenchFeed(follower).add_many([post])
fanout_ms = (time.perf_counter() - started) * 1000

reader = BenchFeed(1)
reader.delete()
history = [activity(i, now - timedelta(seconds=i)) for i in range(1, 1001)]
BenchFeed.insert_activities(history)
reader.add_many(history)
reads = []
for _ in range(300):
    began = time.perf_counter()
    page = list(reader[:10])
    reads.append((time.perf_counter() - began) * 1000)
    assert len(page) == 10
print(json.dumps({"fanout_ms": fanout_ms, "page_p50_ms": statistics.median(reads)}))
