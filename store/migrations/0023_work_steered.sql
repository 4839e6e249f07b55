-- 0023_work_steered: a work row SteerMessage stored already started under
-- a running turn (agent.mid_turn: steer) says so until a turn is started
-- on it again (MarkStarted clears it). A restarted gateway that awaits
-- that turn (StartedBatch) records it as part of the turn only if the
-- turn's outcome lists the message as taken by the agent; otherwise it
-- puts the row back for the next turn. Steered rows stand for one message.
ALTER TABLE work ADD COLUMN steered INTEGER NOT NULL DEFAULT 0;
