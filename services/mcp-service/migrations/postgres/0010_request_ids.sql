-- Idempotency keys (`request_id`) of creating requests, per organization:
-- the request's fingerprint and, once it finished, its encoded response.
-- Rows live for the idempotency window (SWITCHBOARD_REQUEST_ID_WINDOW).
CREATE TABLE request_ids (
    org_id TEXT NOT NULL,
    method TEXT NOT NULL,
    request_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    response BYTEA,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, method, request_id)
);

CREATE INDEX request_ids_created ON request_ids (created_at);
