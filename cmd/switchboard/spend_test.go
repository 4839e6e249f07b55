package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/store"
)

// recordTurn stores a finished turn of folder with usage, as the gateway does.
func recordTurn(t *testing.T, dir, folder string, started time.Time, u store.Usage) {
	t.Helper()
	mustSB(t, dir, "group", "list") // creates the database
	st, err := store.Open(context.Background(), filepath.Join(dir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	turn := store.Turn{ID: "t-" + started.Format("150405.000000") + folder, Folder: folder, ChatJID: "web:lobby", Trigger: store.TriggerMessage,
		Attempt: 1, Started: started, Duration: 2 * time.Second, Status: store.TurnSucceeded, Usage: u}
	if err := st.FinishBatch(context.Background(), store.Batch{Folder: folder, ChatJID: "web:lobby"}, turn, nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
}

func TestTurnsShowsUsage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	recordTurn(t, dir, "main", time.Now(), store.Usage{CostUSD: 0.016656, InputTokens: 1234, OutputTokens: 56, CacheReadTokens: 3000, CacheCreationTokens: 2000})
	out := mustSB(t, dir, "turns")
	if !strings.Contains(out, "$0.0167") || !strings.Contains(out, "1234/56/5000") {
		t.Errorf("switchboard turns:\n%s\nwant the cost $0.0167 and tokens 1234/56/5000", out)
	}
	var lines []turnLine
	if err := json.Unmarshal([]byte(mustSB(t, dir, "--json", "turns", "--folder", "main")), &lines); err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || lines[0].CostUSD != 0.016656 || lines[0].OutputTokens != 56 {
		t.Errorf("turns --json: %+v", lines)
	}
}
