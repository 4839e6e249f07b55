package gateway

import (
	"context"
	"strings"

	"switchboard/agent"
	"switchboard/store"
)

// lostSessionSigns are what agents say when asked to resume a session
// they do not have (its files were removed, another machine made it, …).
var lostSessionSigns = []string{
	"No conversation found with session ID", // Claude Code 2.x: --resume <id>
	"no rollout found for thread id",        // Codex 0.169: exec resume <id>
}

// sessionLost reports whether a failed turn's output says the agent does
// not know the session it was asked to resume.
func sessionLost(res agent.Result, err error) bool {
	for _, sign := range lostSessionSigns {
		if strings.Contains(res.Stderr, sign) || (err != nil && strings.Contains(err.Error(), sign)) {
			return true
		}
	}
	return false
}

// attemptSession is the session an attempt of batch b resumes, given the
// one stored for its chat. A session that keeps failing must not break the
// chat for good: the batch's last attempt, after the agent failed on an
// earlier one, starts a fresh session (which replaces the stored one if
// the attempt succeeds).
func (t *turns) attemptSession(b store.Batch, turn store.Turn, stored string) string {
	first := b.Items[0]
	if stored == "" || first.Attempts == 0 || turn.Attempt < maxAttempts {
		return stored
	}
	t.log.Warn("last attempt runs in a fresh session", "folder", b.Folder, "jid", b.ChatJID, "turn", turn.ID,
		"attempt", turn.Attempt, "session", stored)
	return ""
}

// dropLostSession forgets the chat's session when a turn that resumed it
// failed because the agent does not have it, so that the retry (or the
// chat's next message) starts fresh instead of failing the same way.
func (t *turns) dropLostSession(ctx context.Context, b store.Batch, turnID, session string, res agent.Result, err error) {
	if session == "" || !sessionLost(res, err) {
		return
	}
	dropped, derr := t.st.DropSession(context.WithoutCancel(ctx), b.Folder, b.ChatJID, b.Topic, session)
	if derr != nil {
		t.log.Error("drop lost session", "folder", b.Folder, "jid", b.ChatJID, "turn", turnID, "session", session, "err", derr)
		return
	}
	if dropped {
		t.log.Warn("agent lost the session; the next attempt starts a fresh one", "folder", b.Folder, "jid", b.ChatJID, "turn", turnID, "session", session)
	}
}
