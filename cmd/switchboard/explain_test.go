package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"switchboard/routing"
)

// TestRouteExplainIsBounded: with many routes tried before the winner,
// route explain lists those that could have matched the chat up to
// --limit, says how many more there are, and counts the routes for other
// chats instead of printing a line each; --all lists every one. The
// winner and owner are the whole table's.
func TestRouteExplainIsBounded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")
	st := openDB(t, dir)
	ctx := context.Background()
	for i := range 300 { // other chats' routes
		if _, err := st.AddRoute(ctx, routing.Route{Match: map[string]string{"chat_jid": fmt.Sprintf("web:c%d", i)}, Target: "main"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 25 { // this chat's, for other senders
		if _, err := st.AddRoute(ctx, routing.Route{Match: map[string]string{"chat_jid": "web:lobby", "sender": fmt.Sprintf("web:user/u%d", i)}, Target: "main"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.AddRoute(ctx, routing.Route{Match: map[string]string{"platform": "web"}, Target: "main"}); err != nil {
		t.Fatal(err)
	}

	out := mustSB(t, dir, "route", "explain", "web:lobby", "--sender", "web:user/ann")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "route 326 wins") || len(lines) != 2+1+20+2 {
		t.Errorf("explain printed %d lines, want the winner, the owner, 20 routes tried first and two counts:\n%s", len(lines), out)
	}
	for _, want := range []string{"owner of web:lobby: main", "and 5 more that could have matched this chat (--limit 25 lists them)",
		"300 routes for other chats were tried first and did not match (--all lists them)"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain output lacks %q:\n%s", want, out)
		}
	}
	if all := mustSB(t, dir, "route", "explain", "web:lobby", "--sender", "web:user/ann", "--all"); strings.Count(all, "\n") != 2+1+325 {
		t.Errorf("--all printed %d lines, want every one of the 325 routes tried first", strings.Count(all, "\n"))
	}
	var ex struct {
		Route     routing.Route  `json:"route"`
		Rejected  []any          `json:"rejected"`
		NotListed map[string]int `json:"rejected_not_listed"`
	}
	if err := json.Unmarshal([]byte(mustSB(t, dir, "--json", "route", "explain", "web:lobby", "--sender", "web:user/u7", "--limit", "3")), &ex); err != nil {
		t.Fatal(err)
	}
	if ex.Route.ID != 308 || len(ex.Rejected) != 3 || ex.NotListed["this_chat"] != 4 || ex.NotListed["other_chats"] != 300 {
		t.Errorf("explain --json --limit 3 = winner %d, %d listed, not listed %v; want 308, 3, 4 of this chat and 300 others", ex.Route.ID, len(ex.Rejected), ex.NotListed)
	}
}
