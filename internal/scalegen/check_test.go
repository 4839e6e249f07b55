package scalegen

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckFindsFaults: Check fails, saying what differs, on an
// installation the gateway would not have written: each fault made in a
// freshly generated one.
func TestCheckFindsFaults(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, fault, want string
	}{
		{"rollback journal", `PRAGMA journal_mode = DELETE`, "not in WAL mode"},
		{"no full-text trigger", `DROP TRIGGER messages_fts_insert`, "the schema is not the migrations'"},
		{"a hash size left", `INSERT INTO messages_fts (messages_fts, rank) VALUES ('hashsize', 1048576)`, "full-text configuration"},
		{"a message not indexed", `INSERT INTO messages_fts (messages_fts, rowid, text) SELECT 'delete', seq, text FROM messages WHERE seq = 7`, "full-text integrity-check"},
		{"a gap in the seqs", `DELETE FROM messages WHERE seq = 7`, "want 1 to"},
		{"a stale last_seq", `UPDATE chats SET last_seq = last_seq - 1 WHERE jid = 'web:c0000001'`, "last_seq is not"},
		{"no verb", `UPDATE messages SET verb = '' WHERE seq = 7`, "without a verb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := Generate(ctx, Spec{Dir: t.TempDir(), Groups: 2, Chats: 5, Messages: 500})
			if err != nil {
				t.Fatal(err)
			}
			if err := Check(ctx, ds.DataDir); err != nil {
				t.Fatalf("before the fault: %v", err)
			}
			db, err := sql.Open("sqlite3", filepath.Join(ds.DataDir, "switchboard.db"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, tc.fault); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if err := Check(ctx, ds.DataDir); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check after %s = %v, want an error saying %q", tc.fault, err, tc.want)
			}
		})
	}
}
