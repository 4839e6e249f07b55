package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRouteListPaginates: route list shows a page, not the whole table: a
// page ends with the command that gets the next one, following it walks
// every route once in the order they are tried (seq ties included), --all
// lists them at once, a limit past a page's maximum is a usage error that
// says how to page, and an unknown cursor is named.
func TestRouteListPaginates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")
	for i := range 25 {
		// Seqs 2, 1, 0, 2, 1, 0…: the order differs from the IDs' and ties.
		mustSB(t, dir, "route", "add", "--target", "main", "--seq", fmt.Sprint(2-i%3), fmt.Sprintf("chat_jid=web:c%02d", i))
	}
	type route struct {
		ID  int64 `json:"id"`
		Seq int   `json:"seq"`
	}
	var all []route
	if err := json.Unmarshal([]byte(mustSB(t, dir, "--json", "route", "list", "--all")), &all); err != nil || len(all) != 25 {
		t.Fatalf("route list --all: %d routes, %v; want 25", len(all), err)
	}
	if !slices.IsSortedFunc(all, func(a, b route) int { return a.Seq*1000 + int(a.ID) - b.Seq*1000 - int(b.ID) }) {
		t.Fatalf("route list --all not in the order tried: %v", all)
	}
	if _, errOut, _ := sb(t, dir, "--json", "route", "list", "--all"); errOut != "" {
		t.Errorf("route list --all says %q", errOut)
	}
	next := regexp.MustCompile(`more routes: switchboard route list --limit 10 --after (\d+)\n$`)
	var walked []route
	args := []string{"route", "list", "--limit", "10"}
	for page := 0; ; page++ {
		var rs []route
		out, errOut, err := sb(t, dir, append([]string{"--json"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &rs); err != nil {
			t.Fatalf("page %d: %v\n%s", page, err, out)
		}
		walked = append(walked, rs...)
		m := next.FindStringSubmatch(errOut)
		if page < 2 && (m == nil || len(rs) != 10) {
			t.Fatalf("page %d: %d routes and %q on stderr; want 10 and the next page's command", page, len(rs), errOut)
		}
		if m == nil {
			if page != 2 || len(rs) != 5 {
				t.Errorf("last page %d has %d routes, want page 2 with 5", page, len(rs))
			}
			break
		}
		if text := mustSB(t, dir, args...); !strings.HasSuffix(text, m[0]) || strings.Count(text, "\n") != 12 {
			t.Errorf("text page %d: want a header, 10 routes and the next page's command %q:\n%s", page, m[0], text)
		}
		args = []string{"route", "list", "--limit", "10", "--after", m[1]}
	}
	if !slices.Equal(walked, all) {
		t.Errorf("paging listed\n%v\nwant, as --all,\n%v", walked, all)
	}
	if text := mustSB(t, dir, "route", "list"); strings.Count(text, "\n") != 26 || strings.Contains(text, "more routes") {
		t.Errorf("route list of 25 routes (a page holds 100 by default):\n%s", text)
	}
	if _, _, err := sb(t, dir, "route", "list", "--limit", "5000"); !isUsage(err) || !strings.Contains(err.Error(), "--after") {
		t.Errorf("route list --limit 5000: %v, want a usage error saying to page with --after", err)
	}
	if _, _, err := sb(t, dir, "route", "list", "--after", "9999"); err == nil || !strings.Contains(err.Error(), "no route has that id") {
		t.Errorf("route list --after 9999: %v", err)
	}
}
