package ops

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"time"

	"switchboard/groups"
	"switchboard/store"
)

// TokenPrefix starts every MCP token, so that a leaked one is recognizable
// (secret scanners, logs).
const TokenPrefix = "sbt_"

// MintToken creates a bearer token of the MCP HTTP endpoint (mcp.listen)
// acting as folder until ttl has passed: 256 random bits, of which only the
// SHA-256 is stored. turn is the turn it is minted for ("" for an operator's
// token). The token is returned once and cannot be recovered.
func MintToken(ctx context.Context, st *store.Store, folder groups.Folder, turn string, ttl time.Duration) (string, store.Token, error) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics rather)
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	now := time.Now()
	t := store.Token{ID: store.NewID("tok-"), Folder: folder, TurnID: turn, Created: now, Expires: now.Add(ttl)}
	if err := st.AddToken(ctx, t, store.HashToken(secret)); err != nil {
		return "", store.Token{}, err
	}
	return secret, t, nil
}

// tokenLen is the length of a token: the prefix and 32 bytes of unpadded
// base64url.
var tokenLen = len(TokenPrefix) + base64.RawURLEncoding.EncodedLen(32)

// WellFormedToken reports whether s has the form MintToken gives every
// token, so that what cannot be one is refused without a store lookup.
func WellFormedToken(s string) bool {
	rest, ok := strings.CutPrefix(s, TokenPrefix)
	if !ok || len(s) != tokenLen {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	return err == nil
}
