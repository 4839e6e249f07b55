package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/routing"
)

// RoutesForChat returns, in the order they are tried, the routes that
// could match a message in chat: every route but those whose platform,
// room or chat_jid is a literal (no "*") naming something else. `route
// explain` reads these instead of the whole table: at a hundred thousand
// routes, one per chat, the others all fail on chat_jid, and loading them
// took a second.
func (s *Store) RoutesForChat(ctx context.Context, chat adapters.JID) ([]routing.Route, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, seq, match, target, mode FROM (
			SELECT id, seq, match, target, mode, json_extract(match, '$.platform') AS p,
				json_extract(match, '$.room') AS r, json_extract(match, '$.chat_jid') AS c
			FROM routes)
		WHERE (p IS NULL OR p = ?1 OR instr(p, '*') > 0)
			AND (r IS NULL OR r = ?2 OR instr(r, '*') > 0)
			AND (c IS NULL OR c = ?3 OR instr(c, '*') > 0)
		ORDER BY seq, id`, chat.Platform(), chat.Room(), string(chat))
	rs, err := collect(rows, err, scanRoute)
	if err != nil {
		return nil, fmt.Errorf("routes for chat %s: %w", chat, err)
	}
	return rs, nil
}

// RoutesBefore counts the routes tried before r (all routes when r is
// nil).
func (s *Store) RoutesBefore(ctx context.Context, r *routing.Route) (int, error) {
	var n int
	var err error
	if r == nil {
		err = s.r.QueryRowContext(ctx, `SELECT count(*) FROM routes`).Scan(&n)
	} else {
		err = s.r.QueryRowContext(ctx, `SELECT count(*) FROM routes WHERE seq < ?1 OR (seq = ?1 AND id < ?2)`, r.Seq, r.ID).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("count routes: %w", err)
	}
	return n, nil
}

// RouteTargets counts the routes that point at each folder.
func (s *Store) RouteTargets(ctx context.Context) (map[groups.Folder]int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT target, count(*) FROM routes GROUP BY target`)
	out := map[groups.Folder]int{}
	err = each(rows, err, func(sc scanner) error {
		var f groups.Folder
		var n int
		if err := sc.Scan(&f, &n); err != nil {
			return err
		}
		out[f] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count routes by target: %w", err)
	}
	return out, nil
}

// RoutesPage returns up to limit routes (1 to MaxLimit) in the order they
// are tried (by seq, then id), from the one after route after on (0: from
// the first), and whether more follow. An after that names no route is an
// error wrapping ErrNotFound.
func (s *Store) RoutesPage(ctx context.Context, after int64, limit int) (rs []routing.Route, more bool, err error) {
	if limit < 1 || limit > MaxLimit {
		return nil, false, fmt.Errorf("list routes: limit %d: want 1 to %d", limit, MaxLimit)
	}
	// The cursor: the route's (seq, id); before every route when none.
	seq, id := int64(math.MinInt64), int64(math.MinInt64)
	if after != 0 {
		err := s.r.QueryRowContext(ctx, `SELECT seq, id FROM routes WHERE id = ?`, after).Scan(&seq, &id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, fmt.Errorf("list routes after %d: %w: no route has that id", after, ErrNotFound)
		}
		if err != nil {
			return nil, false, fmt.Errorf("list routes after %d: %w", after, err)
		}
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, seq, match, target, mode FROM routes WHERE (seq, id) > (?, ?)
		ORDER BY seq, id LIMIT ?`, seq, id, limit+1)
	rs, err = collect(rows, err, scanRoute)
	if err != nil {
		return nil, false, fmt.Errorf("list routes: %w", err)
	}
	if len(rs) > limit {
		return rs[:limit], true, nil
	}
	return rs, false, nil
}
