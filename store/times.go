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

// msColumn scans an integer milliseconds column (NULL as 0) into *dst,
// converted by conv.
type msColumn[T any] struct {
	dst  *T
	conv func(int64) T
}

func (c msColumn[T]) Scan(v any) error {
	var ms int64
	switch v := v.(type) {
	case nil:
	case int64:
		ms = v
	default:
		return fmt.Errorf("scan %T: integer milliseconds expected, got %T", *c.dst, v)
	}
	*c.dst = c.conv(ms)
	return nil
}

// msTime scans a unix-milliseconds column into t.
func msTime(t *time.Time) msColumn[time.Time] { return msColumn[time.Time]{t, fromMS} }

// msDuration scans a milliseconds column into d.
func msDuration(d *time.Duration) msColumn[time.Duration] {
	return msColumn[time.Duration]{d, func(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }}
}
