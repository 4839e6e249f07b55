package remote

import "errors"

var (
	// ErrStaleFolder is the error of a delta whose base is not the folder's
	// current version: it is refused and not applied.
	ErrStaleFolder = errors.New("stale folder upload refused")

	// ErrWorkerName, ErrWorkerExists and ErrWorkerUnknown are AddWorker's
	// and RemoveWorker's refusals.
	ErrWorkerName    = errors.New("bad worker name")
	ErrWorkerExists  = errors.New("worker already registered")
	ErrWorkerUnknown = errors.New("no such worker registered")

	errNotRegular = errors.New("not a regular file")
)
