package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"switchboard/routing"
)

// AddRoute stores r with a new ID and returns it as stored: an empty Mode
// becomes routing.Trigger and a nil Match an empty one. The route is not
// validated here; callers do that.
func (s *Store) AddRoute(ctx context.Context, r routing.Route) (routing.Route, error) {
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, insertRouteSQL)
		if err != nil {
			return err
		}
		defer ins.Close()
		return insertRoute(ctx, ins, &r, s.nowMS())
	})
	if err != nil {
		return routing.Route{}, fmt.Errorf("add route to %s: %w", r.Target, err)
	}
	return r, nil
}

// ListRoutes returns every route in the order they are tried: by seq, then id.
func (s *Store) ListRoutes(ctx context.Context) ([]routing.Route, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, seq, match, target, mode FROM routes ORDER BY seq, id`)
	rs, err := collect(rows, err, scanRoute)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	return rs, nil
}

// DeleteRoute deletes the route and returns it as it was, or an error
// wrapping ErrNotFound.
func (s *Store) DeleteRoute(ctx context.Context, id int64) (routing.Route, error) {
	var r routing.Route
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		var err error
		r, err = scanRoute(tx.QueryRowContext(ctx,
			`DELETE FROM routes WHERE id = ? RETURNING id, seq, match, target, mode`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		return err
	})
	if err != nil {
		return routing.Route{}, fmt.Errorf("delete route %d: %w", id, err)
	}
	return r, nil
}

// ReplaceRoutes replaces the whole table with rs in one transaction and
// returns them, in the given order, with their new IDs. IDs are never
// reused, so an old ID never names a new route.
func (s *Store) ReplaceRoutes(ctx context.Context, rs []routing.Route) ([]routing.Route, error) {
	out := make([]routing.Route, len(rs))
	copy(out, rs)
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM routes`); err != nil {
			return err
		}
		return insertRoutes(ctx, tx, out, s.nowMS())
	})
	if err != nil {
		return nil, fmt.Errorf("replace routes: %w", err)
	}
	return out, nil
}

// RoutesSeeded reports whether SeedRoutes has seeded this database.
func (s *Store) RoutesSeeded(ctx context.Context) (bool, error) {
	var done bool
	if err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM meta WHERE key = 'routes_seeded')`).Scan(&done); err != nil {
		return false, fmt.Errorf("check routes seeded: %w", err)
	}
	return done, nil
}

// SeedRoutes stores rs, in one transaction, once in the database's life
// (the config's routes on first start, even if a route was added by the
// CLI before); seeded says whether it did. An empty rs seeds nothing.
func (s *Store) SeedRoutes(ctx context.Context, rs []routing.Route) (seeded bool, err error) {
	if len(rs) == 0 {
		return false, nil
	}
	out := make([]routing.Route, len(rs))
	copy(out, rs)
	err = writeTx(ctx, s.w, func(tx *sql.Tx) error {
		var done bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM meta WHERE key = 'routes_seeded')`).Scan(&done); err != nil {
			return err
		}
		if done {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('routes_seeded', '1')`); err != nil {
			return err
		}
		seeded = true
		return insertRoutes(ctx, tx, out, s.nowMS())
	})
	if err != nil {
		return false, fmt.Errorf("seed routes: %w", err)
	}
	return seeded, nil
}

func insertRoutes(ctx context.Context, tx *sql.Tx, rs []routing.Route, now int64) error {
	// One statement for all: preparing one per route was most of seeding
	// a hundred thousand.
	st, err := tx.PrepareContext(ctx, insertRouteSQL)
	if err != nil {
		return err
	}
	defer st.Close()
	for i := range rs {
		if err := insertRoute(ctx, st, &rs[i], now); err != nil {
			return fmt.Errorf("route %d of %d (target %s): %w", i+1, len(rs), rs[i].Target, err)
		}
	}
	return nil
}

const insertRouteSQL = `INSERT INTO routes (seq, match, target, mode, created_ms) VALUES (?, ?, ?, ?, ?)`

// insertRoute inserts r with ins, insertRouteSQL prepared in a
// transaction, and sets its ID.
func insertRoute(ctx context.Context, ins *sql.Stmt, r *routing.Route, now int64) error {
	if r.Mode == "" {
		r.Mode = routing.Trigger
	}
	if r.Match == nil {
		r.Match = map[string]string{}
	}
	match, err := json.Marshal(r.Match)
	if err != nil {
		return fmt.Errorf("encode match: %w", err)
	}
	res, err := ins.ExecContext(ctx, r.Seq, string(match), r.Target, string(r.Mode), now)
	if err != nil {
		return err
	}
	r.ID, err = res.LastInsertId()
	return err
}

func scanRoute(sc scanner) (routing.Route, error) {
	var (
		r     routing.Route
		match string
		mode  string
	)
	if err := sc.Scan(&r.ID, &r.Seq, &match, &r.Target, &mode); err != nil {
		return routing.Route{}, err
	}
	r.Mode = routing.Mode(mode)
	if err := json.Unmarshal([]byte(match), &r.Match); err != nil {
		return routing.Route{}, fmt.Errorf("decode match of route %d: %w", r.ID, err)
	}
	if r.Match == nil {
		r.Match = map[string]string{}
	}
	return r, nil
}

// SwapRoutes deletes the routes with ids remove and adds add (returned with
// their new IDs), in one transaction: if any id is missing nothing changes
// and the error wraps ErrNotFound. Routes are not validated here.
func (s *Store) SwapRoutes(ctx context.Context, remove []int64, add []routing.Route) ([]routing.Route, error) {
	out := make([]routing.Route, len(add))
	copy(out, add)
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		for _, id := range remove {
			res, err := tx.ExecContext(ctx, `DELETE FROM routes WHERE id = ?`, id)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return fmt.Errorf("route %d: %w", id, ErrNotFound)
			}
		}
		return insertRoutes(ctx, tx, out, s.nowMS())
	})
	if err != nil {
		return nil, fmt.Errorf("swap routes: %w", err)
	}
	return out, nil
}
