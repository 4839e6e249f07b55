package store

import (
	"fmt"
	"time"
)

// The database keeps times as integer unix milliseconds (0: none) and
// durations as integer milliseconds; the store's API uses time.Time (the
// zero time: none) and time.Duration. These convert at the boundary.

// toMS is t in unix milliseconds, 0 for the zero time.
func toMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMS is the time of unix milliseconds ms (local), the zero time for 0.
func fromMS(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// msTime scans an integer unix-milliseconds column into a time.Time.
type msTime struct{ t *time.Time }

func (m msTime) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*m.t = time.Time{}
	case int64:
		*m.t = fromMS(v)
	default:
		return fmt.Errorf("scan time: unix milliseconds expected, got %T", v)
	}
	return nil
}

// msDuration scans an integer milliseconds column into a time.Duration.
type msDuration struct{ d *time.Duration }

func (m msDuration) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*m.d = 0
	case int64:
		*m.d = time.Duration(v) * time.Millisecond
	default:
		return fmt.Errorf("scan duration: milliseconds expected, got %T", v)
	}
	return nil
}
