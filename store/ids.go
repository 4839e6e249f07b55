package store

import (
	"crypto/rand"
	"encoding/hex"
)

// NewID is a random key with prefix for a row the store keeps: a turn
// ("t-", also SWITCHBOARD_TURN_ID), an injected message, an outbox row's
// idempotency key, a token. The CLI (through ops) and the gateway both
// mint them, so it lives under both.
func NewID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return prefix + hex.EncodeToString(b[:])
}
