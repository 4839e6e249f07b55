package store

import (
	"context"
	"database/sql"

	"switchboard/groups"
)

// scanner is a *sql.Row or *sql.Rows positioned on a row.
type scanner interface{ Scan(dest ...any) error }

// each calls fn on every row of a query's result and closes rows. err is
// the query's own error, returned as is: a call reads
//
//	rows, err := db.QueryContext(ctx, query, args...)
//	err = each(rows, err, fn)
func each(rows *sql.Rows, err error, fn func(scanner) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// collect reads every row of a query's result with scan, as each does; the
// slice is empty, not nil, when there are no rows.
func collect[T any](rows *sql.Rows, err error, scan func(scanner) (T, error)) ([]T, error) {
	out := []T{}
	err = each(rows, err, func(sc scanner) error {
		v, err := scan(sc)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryStrings returns the first column of every row (an empty, non-nil
// slice when there are none).
func queryStrings(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	return collect(rows, err, scanOne[string])
}

// queryFolders returns the first column of every row as group folders (an
// empty, non-nil slice when there are none).
func queryFolders(ctx context.Context, q querier, query string, args ...any) ([]groups.Folder, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	return collect(rows, err, scanOne[groups.Folder])
}

// scanOne reads a row of one column.
func scanOne[T any](sc scanner) (T, error) {
	var v T
	err := sc.Scan(&v)
	return v, err
}
