package main

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestStatusTaskTimesCarryTheirZone: the next task times in `status` (text
// and JSON) and on the admin status page are wall times in the task's own
// zone, with its offset and name, not the host's local time.
func TestStatusTaskTimesCarryTheirZone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")
	// Tokyo has no DST: its offset is +09:00 whatever the date.
	mustSB(t, dir, "task", "add", "--folder", "main", "--jid", "web:lobby", "--schedule", "0 9 * * *", "--tz", "Asia/Tokyo", "--prompt", "morning")
	want := regexp.MustCompile(`\d{4}-\d\d-\d\d 09:00:00 \+09:00 Asia/Tokyo`)

	if out := mustSB(t, dir, "status"); !want.MatchString(out) {
		t.Errorf("status does not show the task at 09:00 in Asia/Tokyo:\n%s", out)
	}
	var rep struct {
		NextTasks []struct {
			Timezone string `json:"timezone"`
			Next     string `json:"next"`
		} `json:"next_tasks"`
	}
	if err := json.Unmarshal([]byte(mustSB(t, dir, "--json", "status")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.NextTasks) != 1 || rep.NextTasks[0].Timezone != "Asia/Tokyo" || !strings.HasSuffix(rep.NextTasks[0].Next, "T09:00:00+09:00") {
		t.Errorf("status --json next_tasks = %+v, want 09:00+09:00 in Asia/Tokyo", rep.NextTasks)
	}
	if out := mustSB(t, dir, "task", "list"); !want.MatchString(out) {
		t.Errorf("task list does not show the zone:\n%s", out)
	}

	// The admin status page renders the same report.
	st := openDB(t, dir)
	r, err := readStatus(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := statusPage.Execute(&page, statusPageData{statusReport: r}); err != nil {
		t.Fatal(err)
	}
	_, tasks, _ := strings.Cut(page.String(), `id="tasks"`)
	tasks, _, _ = strings.Cut(tasks, "</table>")
	if !want.MatchString(html.UnescapeString(tasks)) {
		t.Errorf("status page tasks table: %s", tasks)
	}
}
