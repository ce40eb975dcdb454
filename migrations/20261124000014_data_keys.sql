-- Issue 25: crypto-shredding. Each user's data key (AES-256-GCM), wrapped (encrypted) by the
-- master key from RELATIONS_MASTER_KEY. Post and comment content is sealed in the log with the
-- author's key; erasing the user deletes this row in the erasure's transaction, and from then
-- on the content is unreadable everywhere the ciphertext went (the log, replays, Kafka,
-- backups of the log). Never part of the log itself.
CREATE TABLE data_keys
(
    user_id    bigint PRIMARY KEY,
    -- nonce (12 bytes) || AES-256-GCM(master key, data key) (32 + 16 bytes)
    wrapped    bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The erased users, on the write side: a command that names one is refused (404), and the
-- erasure holds each user's row while it decides. Kept in the erasure's transaction.
CREATE TABLE erased_users
(
    user_id   bigint PRIMARY KEY,
    erased_at timestamptz NOT NULL DEFAULT now()
);
