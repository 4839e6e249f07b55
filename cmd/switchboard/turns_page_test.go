package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"switchboard/store"
)

// TestTurnsPaginates: turns is never silently capped: a page ends with the
// command that gets the next one, following it walks every turn exactly
// once (ties in start time included), a limit past a page's maximum is a
// usage error that says how to page, and an unknown cursor is named.
func TestTurnsPaginates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 25 {
		// Pairs of turns share a start time: the cursor must tell them apart.
		recordTurn(t, dir, fmt.Sprintf("g%02d", i), base.Add(time.Duration(i/2)*time.Second), store.Usage{})
	}
	next := regexp.MustCompile(`older turns: switchboard turns --limit 10 --before (\S+)\n$`)
	seen := map[string]bool{}
	args := []string{"turns", "--limit", "10"}
	for page := 0; ; page++ {
		var lines []turnLine
		out, errOut, err := sb(t, dir, append([]string{"--json"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &lines); err != nil {
			t.Fatalf("page %d: %v\n%s", page, err, out)
		}
		for _, l := range lines {
			if seen[l.ID] {
				t.Errorf("turn %s listed twice", l.ID)
			}
			seen[l.ID] = true
		}
		m := next.FindStringSubmatch(errOut)
		if page < 2 && (m == nil || len(lines) != 10) {
			t.Fatalf("page %d: %d turns and %q on stderr; want 10 and the next page's command", page, len(lines), errOut)
		}
		if m == nil {
			if page != 2 || len(lines) != 5 {
				t.Errorf("last page %d has %d turns, want page 2 with 5", page, len(lines))
			}
			break
		}
		if text := mustSB(t, dir, args...); !strings.HasSuffix(text, m[0]) {
			t.Errorf("text page %d does not end with the next page's command %q:\n%s", page, m[0], text)
		}
		args = []string{"turns", "--limit", "10", "--before", m[1]}
	}
	if len(seen) != 25 {
		t.Errorf("paging listed %d turns, want all 25", len(seen))
	}
	if _, _, err := sb(t, dir, "turns", "--limit", "5000"); !isUsage(err) || !strings.Contains(err.Error(), "--before") {
		t.Errorf("turns --limit 5000: %v, want a usage error saying to page with --before", err)
	}
	if _, _, err := sb(t, dir, "turns", "--before", "t-nosuch"); err == nil || !strings.Contains(err.Error(), "no turn has that id") {
		t.Errorf("turns --before t-nosuch: %v", err)
	}
}
