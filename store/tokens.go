package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"switchboard/groups"
)

// MCP tokens: bearer tokens of the MCP Streamable HTTP endpoint. The store
// keeps only their SHA-256 (a TokenHash); the token itself never reaches
// the database.

// TokenHash is the SHA-256 of a token.
type TokenHash [sha256.Size]byte

// HashToken is the hash under which token is stored and looked up.
func HashToken(token string) TokenHash { return sha256.Sum256([]byte(token)) }

// Token is a stored token, without its secret.
type Token struct {
	ID      string
	Folder  groups.Folder // the group the token acts as
	TurnID  string        // the turn it was minted for; "" for an operator's token
	Created time.Time
	Expires time.Time
}

// AddToken stores t under hash.
func (s *Store) AddToken(ctx context.Context, t Token, hash TokenHash) error {
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO mcp_tokens (id, hash, folder, turn_id, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?)`,
			t.ID, hash[:], t.Folder, t.TurnID, toMS(t.Created), toMS(t.Expires))
		return err
	})
	if err != nil {
		return fmt.Errorf("add token %s for %s: %w", t.ID, t.Folder, err)
	}
	return nil
}

// TokenByHash returns the token stored under hash, unless it has expired
// (ErrNotFound for both).
func (s *Store) TokenByHash(ctx context.Context, hash TokenHash) (Token, error) {
	var t Token
	err := s.r.QueryRowContext(ctx, `SELECT id, folder, turn_id, created_ms, expires_ms FROM mcp_tokens WHERE hash = ? AND expires_ms > ?`,
		hash[:], s.nowMS()).Scan(&t.ID, &t.Folder, &t.TurnID, msTime(&t.Created), msTime(&t.Expires))
	if errors.Is(err, sql.ErrNoRows) {
		return Token{}, fmt.Errorf("token: %w", ErrNotFound)
	}
	if err != nil {
		return Token{}, fmt.Errorf("read token: %w", err)
	}
	return t, nil
}

// Tokens lists the tokens that have not expired, oldest first.
func (s *Store) Tokens(ctx context.Context) ([]Token, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, folder, turn_id, created_ms, expires_ms FROM mcp_tokens
		WHERE expires_ms > ? ORDER BY created_ms, id`, s.nowMS())
	out, err := collect(rows, err, func(sc scanner) (Token, error) {
		var t Token
		err := sc.Scan(&t.ID, &t.Folder, &t.TurnID, msTime(&t.Created), msTime(&t.Expires))
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("read tokens: %w", err)
	}
	return out, nil
}

// DeleteToken revokes the token with that id (ErrNotFound if none).
func (s *Store) DeleteToken(ctx context.Context, id string) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM mcp_tokens WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("delete token %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("token %s: %w", id, ErrNotFound)
		}
		return nil
	})
}

// DeleteTurnTokens revokes the token of turn, or with turn "" the tokens of
// every turn but those in keep (at start: the turns of an earlier gateway
// are over, except those it awaits on workers), and drops expired tokens.
// It returns how many it deleted.
func (s *Store) DeleteTurnTokens(ctx context.Context, turn string, keep ...string) (int64, error) {
	var n int64
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		q := `DELETE FROM mcp_tokens WHERE (turn_id != '' AND (? = '' OR turn_id = ?)`
		args := []any{turn, turn}
		if len(keep) > 0 {
			q += ` AND turn_id NOT IN (?` + strings.Repeat(",?", len(keep)-1) + `)`
			for _, k := range keep {
				args = append(args, k)
			}
		}
		res, err := tx.ExecContext(ctx, q+`) OR expires_ms <= ?`, append(args, s.nowMS())...)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete turn tokens: %w", err)
	}
	return n, nil
}

// revokeTurnToken deletes a finished turn's token inside its FinishBatch
// transaction: once the turn is recorded, its token opens nothing.
func revokeTurnToken(ctx context.Context, tx *sql.Tx, turn string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM mcp_tokens WHERE turn_id = ?`, turn); err != nil {
		return fmt.Errorf("revoke token of turn %s: %w", turn, err)
	}
	return nil
}
