package adapters

import (
	"sync"
	"time"
)

// Hold is an adapter-wide pause after a 429: CONTRACT §13 pauses the whole
// adapter for the platform's wait, not only the route or method that got
// it. The zero value holds nothing; it is safe for concurrent use.
type Hold struct {
	mu    sync.Mutex
	until time.Time
}

// Set holds from now for d, never shortening a longer hold.
func (h *Hold) Set(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if until := time.Now().Add(d); until.After(h.until) {
		h.until = until
	}
}

// Left is how long the hold lasts from now (0: none).
func (h *Hold) Left() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return max(time.Until(h.until), 0)
}
