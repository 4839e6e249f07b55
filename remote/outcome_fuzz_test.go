package remote

import (
	"encoding/json"
	"math"
	"testing"

	"switchboard/agent"
)

// outcomeSeeds are results a forged or broken worker could publish: the
// usage of each is refused or passes, and none may panic the gateway.
var outcomeSeeds = []string{
	`{"turn_id":"t1","worker":"w","reply":"hi","usage":{"CostUSD":0.25,"InputTokens":1200,"OutputTokens":80}}`,
	`{"turn_id":"t1","worker":"w","usage":{"CostUSD":-5}}`,
	`{"turn_id":"t1","worker":"w","usage":{"CostUSD":1e308,"SessionCost":1e308}}`,
	`{"turn_id":"t1","worker":"w","usage":{"CostUSD":-1e308,"InputTokens":-9223372036854775808}}`,
	`{"turn_id":"t1","worker":"w","usage":{"CostUSD":"NaN"}}`,
	`{"turn_id":"t1","worker":"w","usage":{"CostUSD":1e999}}`,
	`{"turn_id":"t1","worker":"w","usage":{"InputTokens":9223372036854775807,"OutputTokens":9223372036854775807}}`,
	`{"turn_id":"t1","worker":"w","usage":{"APIDuration":-9223372036854775808,"NumTurns":-1}}`,
	`{"turn_id":"t1","worker":"w","error":"boom","usage":{"CostUSD":0.5,"Refused":"forged"}}`,
	`{"turn_id":"t1","usage":null}`,
	`{"turn_id":"t1","usage":[1,2]}`,
	`{"turn_id":"t1","duration_ms":-9223372036854775808,"exit_code":-1}`,
	`not json at all`,
	``,
}

// FuzzOutcome decodes a published outcome as the gateway's Runner does
// (deliver) and converts it (outcomeResult): whatever the bytes, nothing
// panics and the Usage that reaches the gateway's spend path is one that
// Checked lets through: finite, not negative, under the ceilings, or
// refused with every figure zero. Its seeds run in every go test.
func FuzzOutcome(f *testing.F) {
	for _, s := range outcomeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var o Outcome
		if err := json.Unmarshal(data, &o); err != nil || o.TurnID == "" {
			return // deliver drops it with a warning
		}
		res, _ := outcomeResult(o, "s")
		u := res.Usage
		if u.Checked() != u {
			t.Fatalf("outcome %s gives usage %+v, which Checked would still change", data, u)
		}
		for _, v := range []float64{u.CostUSD, u.SessionCost} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > agent.MaxTurnCostUSD {
				t.Fatalf("outcome %s gives cost %v", data, v)
			}
		}
		for _, n := range []int64{u.InputTokens, u.OutputTokens, u.CacheCreationTokens, u.CacheReadTokens, u.NumTurns} {
			if n < 0 || n > agent.MaxTurnTokens {
				t.Fatalf("outcome %s gives count %d", data, n)
			}
		}
		if u.Refused != "" && u != (agent.Usage{MaxBudgetHit: u.MaxBudgetHit, Refused: u.Refused}) {
			t.Fatalf("outcome %s: refused usage %+v keeps figures", data, u)
		}
	})
}
