-- What a replica's copy of a session sends on its own (list changes, log
-- messages, resource updates) goes to the client's stream (its GET), which
-- may be held by another replica: the replica holding it is recorded with
-- the session, and the messages are left for it beside the relayed answers
-- (`kind` tells them apart). Only replicas that record a stream are sent
-- notices, so a replica of the previous version never takes one.
ALTER TABLE endpoint_sessions ADD COLUMN stream_replica TEXT;
ALTER TABLE endpoint_session_answers ADD COLUMN kind TEXT NOT NULL DEFAULT 'answer';
