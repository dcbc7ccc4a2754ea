-- Storing a message marks its thread as active, within the same statement,
-- so appending a message is one write.
CREATE FUNCTION messages_touch_thread() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE threads SET updated_at = NEW.created_at WHERE id = NEW.thread_id;
    RETURN NULL;
END;
$$;

CREATE TRIGGER messages_touch_thread AFTER INSERT ON messages
FOR EACH ROW EXECUTE FUNCTION messages_touch_thread();
