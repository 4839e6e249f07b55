package remote

import "errors"

var (
	// ErrStaleFolder is the error of a delta whose base is not the folder's
	// current version: it is refused and not applied.
	ErrStaleFolder = errors.New("stale folder upload refused")

	errNotRegular = errors.New("not a regular file")
)
