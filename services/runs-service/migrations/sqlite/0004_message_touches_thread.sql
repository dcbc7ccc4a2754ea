-- Storing a message marks its thread as active, within the same statement,
-- so appending a message is one write.
CREATE TRIGGER messages_touch_thread AFTER INSERT ON messages
BEGIN
    UPDATE threads SET updated_at = NEW.created_at WHERE id = NEW.thread_id;
END;
