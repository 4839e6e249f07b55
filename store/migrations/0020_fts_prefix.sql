-- 0020_fts_prefix: the full-text index gains prefix indexes of two and
-- three characters, so a prefix query (find_messages "dep*", "w12*")
-- reads one list of matches instead of merging the lists of every word
-- that starts so (at a million messages that took seconds). FTS5 cannot
-- add them to an index in place: the index is made again from the
-- messages (its triggers on messages stay, and write to the new one). This
-- runs once, at the first start after the upgrade, and start-up waits for
-- it: 6 to 10 s a million messages on a 2-core machine under load, about a
-- minute or two at ten million (docs/scaling.md, "One machine").
DROP TABLE messages_fts;
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    text,
    content = 'messages',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2',
    prefix = '2 3'
);
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
