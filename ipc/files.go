package ipc

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"switchboard/groups"
)

// Files in a group folder are opened through os.Root, so neither ".." nor a
// symlink can reach outside the folder; the folder itself is reached
// without following a symlink (groups.Layout.OpenRoot).

// MaxWork bounds a group's work.md.
const MaxWork = 256 << 10

const workFile = "work.md"

// groupDir is the absolute working directory of folder.
func (s *Server) groupDir(folder groups.Folder) (string, error) {
	dir, err := filepath.Abs(s.opt.Layout.Dir(folder))
	if err != nil {
		return "", fmt.Errorf("group folder: %w", err)
	}
	return dir, nil
}

// groupFile resolves p (relative to the group folder, or absolute inside
// it) to the path, relative to folder's directory, of a regular file in it.
// It never blocks: a FIFO is opened non-blocking and refused.
func (s *Server) groupFile(folder groups.Folder, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("path is empty")
	}
	dir, err := s.groupDir(folder)
	if err != nil {
		return "", err
	}
	rel := p
	if filepath.IsAbs(p) {
		if rel, err = filepath.Rel(dir, filepath.Clean(p)); err != nil {
			return "", fmt.Errorf("path %s is outside the group folder %s", p, dir)
		}
	}
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("path %s is outside the group folder %s; only files inside it can be sent", p, dir)
	}
	root, err := s.opt.Layout.OpenRoot(folder)
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fileError(p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fileError(p, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", p)
	}
	return filepath.Clean(rel), nil
}

func fileError(p string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file in the group folder", p)
	case strings.Contains(err.Error(), "escapes"):
		return fmt.Errorf("path %s leads outside the group folder (through a symlink or ..); only files inside it can be used", p)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// readWork returns folder's work.md ("" and false when there is none).
func (s *Server) readWork(folder groups.Folder) (string, bool, error) {
	root, err := s.opt.Layout.OpenRoot(folder)
	if err != nil {
		return "", false, err
	}
	defer root.Close()
	// Non-blocking: a FIFO named work.md must not hang the call.
	f, err := root.OpenFile(workFile, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fileError(workFile, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", true, fmt.Errorf("%s is not a regular file; replace it with one (set_work does)", workFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxWork+1))
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", workFile, err)
	}
	if len(b) > MaxWork {
		return "", true, fmt.Errorf("%s is larger than %d bytes; shorten it in the folder", workFile, MaxWork)
	}
	return string(b), true, nil
}

// writeWork replaces folder's work.md atomically: a temporary file in the
// folder, synced, then renamed over it.
func (s *Server) writeWork(folder groups.Folder, content string) error {
	if len(content) > MaxWork {
		return fmt.Errorf("content is %d bytes, at most %d allowed", len(content), MaxWork)
	}
	root, err := s.opt.Layout.OpenRoot(folder)
	if err != nil {
		return err
	}
	defer root.Close()
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := ".work.md." + hex.EncodeToString(rnd[:]) + ".tmp"
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", workFile, err)
	}
	_, err = io.WriteString(f, content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, workFile)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("write %s: %w", workFile, err)
	}
	return nil
}
