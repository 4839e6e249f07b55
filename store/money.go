package store

import (
	"fmt"
	"math"
)

// The database keeps costs as integer micro-dollars (migration 0013), so
// that sums are exact; the store's API uses float64 US dollars. These
// convert at the boundary: a figure read back is the nearest float64 to a
// whole number of micro-dollars (0.8 + 0.8 + 0.8 reads 2.4).

const microsPerUSD = 1_000_000

// maxCostUSD is the largest cost the store records for one turn: far
// above what the usage check lets through (agent.MaxTurnCostUSD), far
// below where a sum of micro-dollars could overflow.
const maxCostUSD = 1e9

// toMicros is usd in whole micro-dollars (rounded to the nearest), or an
// error wrapping ErrBadCost when it is negative, not finite or over
// maxCostUSD.
func toMicros(what string, usd float64) (int64, error) {
	if math.IsNaN(usd) || usd < 0 || usd > maxCostUSD {
		return 0, fmt.Errorf("%w: %s %v is not between 0 and %.0f US dollars", ErrBadCost, what, usd, float64(maxCostUSD))
	}
	return int64(math.Round(usd * microsPerUSD)), nil
}

// fromMicros is a count of micro-dollars in US dollars.
func fromMicros(m int64) float64 { return float64(m) / microsPerUSD }

// microsColumn scans an integer micro-dollars column (NULL as 0) into *dst
// as US dollars.
type microsColumn struct{ dst *float64 }

func (c microsColumn) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*c.dst = 0
	case int64:
		*c.dst = fromMicros(v)
	default:
		return fmt.Errorf("scan cost: integer micro-dollars expected, got %T", v)
	}
	return nil
}

// usdMicros scans a micro-dollars column into usd.
func usdMicros(usd *float64) microsColumn { return microsColumn{usd} }
