package remote

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"switchboard/agent"
)

// A worker runs only jobs that make sense (checkJob): whoever can publish
// on its subject could otherwise name any folder (a job for "/" made the
// copy of "/" the worker's whole folders directory and wiped every copy),
// any object or any deadline. A refused job is logged with the reason and
// answered with a failed, not-started outcome.

// maxJobAhead is how far in the future a job's deadline may lie: more
// than any agent.timeout.
const maxJobAhead = 7 * 24 * time.Hour

// validTurnID reports whether id, read from NATS or a file, is a well
// formed agent.TurnID, so that it is a NATS subject token, a message id
// and a file name as it is.
func validTurnID(id string) bool { return agent.TurnID(id).Validate() == nil }

// checkJob is why j is refused, or nil: a malformed turn id, a folder
// (Dir) that is not an absolute clean path strictly inside the folders
// root the gateway announced (Root: absolute, clean, not "/"), no
// command, a deadline unset or further than maxJobAhead, a negative
// output cap, or a folder version whose objects are not that folder's.
func checkJob(j Job, now time.Time) error {
	if err := agent.TurnID(j.TurnID).Validate(); err != nil {
		return err
	}
	if !cleanAbs(j.Root) || j.Root == "/" {
		return fmt.Errorf("folders root %q is not a clean absolute path other than /", j.Root)
	}
	if !cleanAbs(j.Dir) || !strings.HasPrefix(j.Dir, j.Root+"/") {
		return fmt.Errorf("folder %q is not a clean absolute path inside the gateway's folders root %s", j.Dir, j.Root)
	}
	if len(j.Command) == 0 || j.Command[0] == "" {
		return errors.New("no agent command")
	}
	if j.DeadlineMs <= 0 || time.UnixMilli(j.DeadlineMs).After(now.Add(maxJobAhead)) {
		return fmt.Errorf("deadline %d (Unix ms) is unset or more than %s ahead", j.DeadlineMs, maxJobAhead)
	}
	if j.MaxOutput < 0 {
		return fmt.Errorf("max_output %d is negative", j.MaxOutput)
	}
	if j.Input != "" {
		if _, err := agent.ParseInputFormat(string(j.Input)); err != nil {
			return err
		}
	}
	if j.Folder != nil {
		return checkFolderRef(j.Dir, *j.Folder)
	}
	return nil
}

func cleanAbs(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

// checkFolderRef refuses a version of dir whose digest is not a SHA-256
// in hex, or whose objects are not dir's (named <folderKey(dir)>/<turn>
// .full.tgz and .delta.tgz, as the gateway and the workers name them), or
// whose deleted paths leave the folder.
func checkFolderRef(dir string, ref FolderRef) error {
	if ref.Version == 0 || !isSHA256Hex(ref.Digest) {
		return fmt.Errorf("folder version %d with digest %q is malformed", ref.Version, ref.Digest)
	}
	key := folderKey(dir)
	if !ownObject(key, ref.Object, ".full.tgz") {
		return fmt.Errorf("folder snapshot %q is not one of folder %s (%s/<turn>.full.tgz)", ref.Object, dir, key)
	}
	for _, d := range ref.Deltas {
		if d.Object != "" && !ownObject(key, d.Object, ".delta.tgz") {
			return fmt.Errorf("folder delta %q is not one of folder %s (%s/<turn>.delta.tgz)", d.Object, dir, key)
		}
		for _, p := range d.Deleted {
			if err := checkName(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// ownObject reports whether name is <key>/<turn id><suffix>.
func ownObject(key, name, suffix string) bool {
	rest, ok := strings.CutPrefix(name, key+"/")
	if !ok {
		return false
	}
	turn, ok := strings.CutSuffix(rest, suffix)
	return ok && validTurnID(turn)
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}
