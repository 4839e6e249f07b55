package main

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/agent"
	"switchboard/gateway"
	"switchboard/ops"
	"switchboard/store"
)

// TestStatusPageSpendChart: the status page's spend panel lists each
// group's spend against its caps, and its per-hour chart of the last 24
// hours renders in headless Chromium: the screenshot holds a column of
// the spend bars' colour as tall as the tallest bar, and one of the turns
// bars' colour.
func TestStatusPageSpendChart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	now := time.Now()
	// main: 1 turn 20 h ago ($0.50), 4 turns 2 h ago ($1 each); main/sub
	// (within main's budget): 1 turn now ($3).
	dayStart, _, monthStart, _ := ops.Windows(now.UTC())
	today, month := 0.0, 0.0
	for i, tc := range []struct {
		folder string
		ago    time.Duration
		cost   float64
	}{{"main", 20 * time.Hour, 0.5}, {"main", 2 * time.Hour, 1}, {"main", 2 * time.Hour, 1}, {"main", 2 * time.Hour, 1},
		{"main", 2 * time.Hour, 1}, {"main/sub", 0, 3}} {
		if tc.folder == "main/sub" {
			mustSB(t, dir, "group", "add", "main")
			mustSB(t, dir, "group", "add", "main/sub")
		}
		// Within one hour's bucket, whatever the minute now.
		at := now.Truncate(time.Hour).Add(-tc.ago + time.Minute + time.Duration(i)*time.Second)
		if tc.ago == 0 {
			at = now // today, whatever the time of day: main's daily $3 is always used up
		}
		recordTurn(t, dir, tc.folder, at, store.Usage{CostUSD: tc.cost})
		if !at.Before(dayStart) {
			today += tc.cost
		}
		if !at.Before(monthStart) {
			month += tc.cost
		}
	}
	mustSB(t, dir, "budget", "set", "main", "--daily", "3")
	st := openDB(t, dir)
	g, err := gateway.New(gateway.Options{Store: st, Agent: agent.Spec{Command: []string{"true"}}, DataDir: dir, Operator: "root",
		Timezone: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	adm, err := startAdmin("127.0.0.1:0", g, st, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.stop()
	url := "http://" + adm.ln.Addr().String() + "/"
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(body)
	for _, want := range []string{
		fmt.Sprintf(`<td>main</td><td>%s</td><td>$3.00</td><td>%s</td><td>none</td><td><span class="bad">used up: turns held</span>`, usd(today), usd(month)),
		`<td>main/sub</td><td>$3.00</td><td>none</td>`,
		`id="spend-chart"`, "last 24 h: 6 turns, $7.50", "4 turns, $4.00",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Fatalf("page:\n%s", page)
	}

	chromium := findChromium(t)
	shot := filepath.Join(t.TempDir(), "status.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--force-device-scale-factor=1", "--window-size=1000,2000", "--screenshot="+shot, url).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("STATUS_SCREENSHOT"); keep != "" {
		b, _ := os.ReadFile(shot)
		_ = os.WriteFile(keep, b, 0o644)
	}
	// The tallest bar of each series is chartPlot px high; the legend's
	// key squares are about 11 px.
	for name, colour := range map[string]string{"spend": chartSpendColor, "turns": chartTurnsColor} {
		if got := tallestColumn(img, colour); got < chartPlot-5 {
			t.Errorf("%s bars (%s): the tallest column of that colour in the screenshot is %d px, want about %d", name, colour, got, chartPlot)
		}
	}
}

// tallestColumn is the most pixels of colour (#rrggbb, ±6 per channel)
// in one column of img.
func tallestColumn(img image.Image, colour string) int {
	var r0, g0, b0 int
	fmt.Sscanf(colour, "#%02x%02x%02x", &r0, &g0, &b0)
	near := func(a, b int) bool { return a-b <= 6 && b-a <= 6 }
	best := 0
	bounds := img.Bounds()
	for x := bounds.Min.X; x < bounds.Max.X; x++ {
		n := 0
		for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if near(int(r>>8), r0) && near(int(g>>8), g0) && near(int(b>>8), b0) {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}
