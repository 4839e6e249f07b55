// Package groups owns group folder names (the Folder type): validation, the
// one tier function, parent and subtree relations, and the on-disk layout of
// a group (its working directory, its MCP socket path and the .mcp.json that
// points clients at it).
package groups

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MaxDepth is the deepest a folder may be nested.
const MaxDepth = 6

// ErrInvalidFolder: a folder name breaks the naming rules.
var ErrInvalidFolder = errors.New("invalid group folder")

// Folder is a group's folder path ("main", "acme/eng"): lowercase
// [a-z0-9_-] segments joined by "/". ParseFolder mints one from outside text
// (flags, config, tool arguments); elsewhere it is passed along as is.
type Folder string

// ParseFolder validates s as a folder path and returns it.
func ParseFolder(s string) (Folder, error) {
	f := Folder(s)
	if err := f.Validate(); err != nil {
		return "", err
	}
	return f, nil
}

// Validate checks a folder path: lowercase [a-z0-9_-] segments joined by "/",
// no empty or ".." segment, at most MaxDepth deep.
func (f Folder) Validate() error {
	if f == "" {
		return fmt.Errorf("%w: empty name", ErrInvalidFolder)
	}
	segs := strings.Split(string(f), "/")
	if len(segs) > MaxDepth {
		return fmt.Errorf("%w %q: %d levels deep, at most %d allowed", ErrInvalidFolder, f, len(segs), MaxDepth)
	}
	for i, s := range segs {
		if s == "" {
			return fmt.Errorf("%w %q: empty segment %d (leading, trailing or double /)", ErrInvalidFolder, f, i+1)
		}
		if len(s) > 64 {
			return fmt.Errorf("%w %q: segment %q is longer than 64 characters", ErrInvalidFolder, f, s)
		}
		for _, r := range s {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
				return fmt.Errorf("%w %q: segment %q has %q; use lowercase letters, digits, _ and -", ErrInvalidFolder, f, s, r)
			}
		}
	}
	return nil
}

func (f Folder) String() string { return string(f) }

// Depth is the number of segments: "main" is 1, "acme/eng" is 2.
func (f Folder) Depth() int { return strings.Count(string(f), "/") + 1 }

// Tier is the one tier function. The operator folder is tier 0; any other
// top-level folder is tier 1; depth 2 is tier 2; depth 3 and deeper is tier 3.
func Tier(folder, operator Folder) int {
	if folder == operator {
		return 0
	}
	return min(folder.Depth(), 3)
}

// Parent returns the folder's parent, or "" for a top-level folder.
func (f Folder) Parent() Folder {
	i := strings.LastIndexByte(string(f), '/')
	if i < 0 {
		return ""
	}
	return f[:i]
}

// Contains reports whether g is f or one of its descendants: whether g is
// in f's subtree.
func (f Folder) Contains(g Folder) bool {
	return g == f || strings.HasPrefix(string(g), string(f)+"/")
}

// Layout locates a group's files under a data directory.
type Layout struct{ DataDir string }

// Dir is the group's working directory: <data_dir>/groups/<folder>.
func (l Layout) Dir(folder Folder) string {
	return filepath.Join(l.DataDir, "groups", filepath.FromSlash(string(folder)))
}

// OpenRoot opens the group's working directory as an os.Root, reached from
// <data_dir>/groups without following a symlink (OpenDirBelow): files the
// gateway reads or writes for the group (send_file, work.md, attachments)
// stay in the group's own folder even when its parent's agent swapped it
// for a symlink to somewhere else.
func (l Layout) OpenRoot(folder Folder) (*os.Root, error) {
	f, err := OpenDirBelow(filepath.Join(l.DataDir, "groups"), l.Dir(folder))
	if err != nil {
		return nil, fmt.Errorf("open group folder: %w", err)
	}
	defer f.Close()
	r, err := rootOf(f)
	if err != nil {
		return nil, fmt.Errorf("open group folder: %w", err)
	}
	return r, nil
}

// SocketRoot holds every group's socket directory: <data_dir>/ipc.
func (l Layout) SocketRoot() string { return filepath.Join(l.DataDir, "ipc") }

// SocketPath is the group's MCP socket: <data_dir>/ipc/<folder>/mcp.sock.
func (l Layout) SocketPath(folder Folder) string {
	return filepath.Join(l.SocketRoot(), filepath.FromSlash(string(folder)), "mcp.sock")
}

// Setup creates the group's working directory and writes its .mcp.json, which
// points MCP clients at "<exe> mcp-bridge --socket <abs socket path>". It is
// idempotent and leaves other files in the folder alone. Group data is
// private: the folder (and the groups/ directory above it) is made 0700,
// tightening one that already exists.
func (l Layout) Setup(folder Folder, exe string) error {
	if err := folder.Validate(); err != nil {
		return err
	}
	dir := l.Dir(folder)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create group folder: %w", err)
	}
	// Its parent's agent may have swapped the folder for a symlink: write
	// nothing through one (OpenRoot refuses it).
	root, err := l.OpenRoot(folder)
	if err != nil {
		return err
	}
	defer root.Close()
	for d := dir; ; d = filepath.Dir(d) {
		// Only when needed: a gateway sets up every folder at each start,
		// and a chmod is a journaled write even when nothing changes.
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			if err := os.Chmod(d, 0o700); err != nil {
				return fmt.Errorf("make group folder private: %w", err)
			}
		}
		if filepath.Base(d) == "groups" || d == filepath.Dir(d) {
			break
		}
	}
	sock, err := filepath.Abs(l.SocketPath(folder))
	if err != nil {
		return fmt.Errorf("socket path: %w", err)
	}
	cfg := map[string]any{"mcpServers": map[string]any{"switchboard": map[string]any{
		"command": exe,
		"args":    []string{"mcp-bridge", "--socket", sock},
	}}}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	b = append(b, '\n')
	if old, err := root.ReadFile(".mcp.json"); err == nil && bytes.Equal(old, b) {
		return nil // already what it would be written as
	}
	if err := root.WriteFile(".mcp.json", b, 0o600); err != nil {
		return fmt.Errorf("write .mcp.json: %w", err)
	}
	return nil
}
