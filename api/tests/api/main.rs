//! Black-box tests of the `relations` service against real PostgreSQL and Redis.

#[allow(dead_code)]
mod helpers;

mod accounts;
mod analytics;
mod auth_and_input;
mod bookmarks;
mod broker;
mod cli;
mod concurrency;
mod content_keys;
mod doors;
mod engagement;
mod erasure;
mod failover;
mod fan_tables;
mod faults;
mod feed;
mod feed_model;
mod filters;
mod follow_prefs;
mod forgotten;
mod graph;
mod group_commit;
mod idempotency;
mod insights;
mod instances;
mod kafka;
mod lists;
mod log_partitions;
mod notification_policy;
mod notifications;
mod notifications_model;
mod openapi;
mod operator;
mod ops;
#[allow(dead_code)]
mod owned;
mod privacy;
mod private_content;
mod private_model;
mod queries;
mod quotes;
mod rate_limit;
mod replica;
mod reply_controls;
mod reposts;
mod reposts_in_feeds;
mod requests;
mod rules;
mod shared_log;
mod storage_faults;
mod stream;
mod suggestions;
mod tools;
