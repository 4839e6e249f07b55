-- 0017_live_parts: what a live reply record is, so that a crash at any
-- point of a live reply's delivery leaves the reply delivered once. state:
-- 'live' (a message showing the reply so far; it becomes part `part` of
-- the final or is cleaned up), 'part' (finished mid-turn as a message of
-- its own: delivered, its text kept to match the final's parts against),
-- 'ended' (the platform ended it; the final goes out as a new message).
-- reply_to links the parts a crashed turn delivered to the turn that
-- answers the same message again.
ALTER TABLE live_replies ADD COLUMN state    TEXT NOT NULL DEFAULT 'live';
ALTER TABLE live_replies ADD COLUMN text     TEXT NOT NULL DEFAULT '';
ALTER TABLE live_replies ADD COLUMN reply_to TEXT NOT NULL DEFAULT '';
