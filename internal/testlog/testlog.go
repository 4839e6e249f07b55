// Package testlog is a log sink for tests: a buffer a logger writes to from
// its goroutines while the test reads it.
package testlog

import (
	"strings"
	"sync"
)

// Buffer is a strings.Builder safe for concurrent writes and reads.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
