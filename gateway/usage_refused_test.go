package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"switchboard/agent"
	"switchboard/groups"
	"switchboard/internal/testagent"
	"switchboard/internal/testlog"
	"switchboard/ops"
	"switchboard/store"
)

// TestAbsurdUsageRefused: two turns whose agent reports $1e308 (which
// summed to +Inf and broke every JSON report and budget) are recorded
// with no cost, the log says why with the turn id, and the spend reports
// (list_budgets, budget list, status) stay finite and encodable.
func TestAbsurdUsageRefused(t *testing.T) {
	var logs testlog.Buffer
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, `cat >/dev/null; echo ok; echo '{"switchboard_usage": {"cost_usd": 1e308, "output_tokens": 5}}'`),
		modify: func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) }})
	ctx := context.Background()
	if err := h.st.SetBudget(ctx, store.Budget{Folder: "root", DailyUSD: 5}); err != nil {
		t.Fatal(err)
	}
	h.post(testChat, "m1", "one")
	h.waitSent(testChat, 1)
	h.post(testChat, "m2", "two")
	h.waitSent(testChat, 2)
	for _, turn := range h.turns("main") {
		if turn.Usage != (store.Usage{}) {
			t.Errorf("turn %s usage %+v, want nothing counted", turn.ID, turn.Usage)
		}
		if want := fmt.Sprintf(`msg="usage refused" turn_id=%s folder=main reason="cost_usd 1e+308 is not between 0 and 10000 US dollars"`, turn.ID); !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
	infos, err := h.g.backend.Budgets(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(infos); err != nil {
		t.Errorf("list_budgets: %v", err)
	}
	for _, b := range infos {
		if b.TodayUSD != 0 || b.MonthUSD != 0 || b.UsedUp {
			t.Errorf("list_budgets: %+v, want nothing spent and nothing used up", b)
		}
	}
}

// FuzzRecordUsage feeds the usage a worker's outcome carries (as JSON,
// unchecked: the defence behind remote's check) through the gateway's
// spend path: recordUsage (Prometheus counters), the turn's record, and
// the spend report. Nothing panics, nothing stored is refused, and the
// report stays finite. Its seeds run in every go test.
func FuzzRecordUsage(f *testing.F) {
	for _, s := range []string{
		`{"CostUSD":0.25,"InputTokens":1200,"OutputTokens":80}`,
		`{"CostUSD":-5}`,
		`{"CostUSD":1e308}`,
		`{"CostUSD":1e308,"SessionCost":1e308}`,
		`{"CostUSD":-1e308,"InputTokens":-9223372036854775808}`,
		`{"InputTokens":9223372036854775807,"OutputTokens":9223372036854775807}`,
		`{"APIDuration":-9223372036854775808,"NumTurns":-1}`,
		`{"CostUSD":9999.999999,"SessionCost":10000}`,
		`{"CostUSD":0.5,"Refused":"forged"}`,
	} {
		f.Add([]byte(s))
	}
	h := newHarness(f, harnessConfig{agent: []string{"true"}, noStart: true})
	ctx := context.Background()
	n := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		var u agent.Usage
		if json.Unmarshal(data, &u) != nil {
			return
		}
		n++
		turn := store.Turn{ID: fmt.Sprintf("fuzz-%d", n), Folder: "main", ChatJID: testChat, Trigger: store.TriggerMessage, Attempt: 1,
			Started: time.Now(), Status: store.TurnSucceeded}
		h.g.turns.recordUsage(ctx, &turn, "s", agent.Result{SessionID: "s", Usage: u})
		if err := h.st.FinishBatch(ctx, store.Batch{Folder: "main", ChatJID: testChat}, turn, nil, time.Time{}); err != nil {
			t.Fatalf("usage %s: record the turn: %v", data, err)
		}
		rep, err := ops.SpendReport(ctx, h.st, []groups.Folder{"main"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if v := rep[0].MonthUSD; math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Fatalf("usage %s: month's spend %v", data, v)
		}
		if _, err := json.Marshal(rep); err != nil {
			t.Fatalf("usage %s: spend report: %v", data, err)
		}
	})
}
