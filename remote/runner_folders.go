package remote

import (
	"context"
	"errors"
	"time"

	"switchboard/agent"
)

// The Runner's side of the versioned folders (folders.go): a job's
// version published before the turn, its outcome's changes applied after.

// publishFolder is the folder version job runs on: the current one, or a
// new one with a full snapshot when the folder changed since.
func (r *Runner) publishFolder(ctx context.Context, job Job) (*FolderRef, error) {
	ref, err := r.fold.publish(ctx, job.Dir, job.TurnID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, agent.Cancelled(ctx.Err())
		}
		return nil, agent.Failed("snapshot the group folder for a worker: " + err.Error())
	}
	return &ref, nil
}

// applyFolder applies the folder changes an outcome carries (o.Folder;
// nil: none) to the gateway's folder, once, for an outcome acceptOutcome
// accepted: only when the folder is still at the version the turn ran on
// (o.Folder.Base). Then the changed files are written into the folder
// (through os.Root, within nats.max_folder_mb), the deleted ones removed
// (files the gateway added meanwhile, such as inbox downloads, stay), and
// the folder's entry advances to a new version. Otherwise the changes are
// refused: a warning names the worker, the turn and both versions, and
// StaleFolderUploads counts it. Applying an outcome that was applied
// already does nothing.
func (r *Runner) applyFolder(o Outcome) {
	if o.Folder == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.fold.apply(ctx, o); err != nil && !errors.Is(err, ErrStaleFolder) {
		r.log.Error("apply a remote turn's folder changes", "turn", o.TurnID, "worker", o.Worker, "err", err)
	}
}

var _ agent.StaleFolderCounter = (*Runner)(nil)

// StaleFolderUploads is agent.StaleFolderCounter: how many folder uploads
// were refused because their base version was no longer current.
func (r *Runner) StaleFolderUploads() int64 { return r.fold.refused.Load() }
