package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
)

// LoadSettings is Load for the commands other than run: everything but the
// groups: and routes: lists, which only run reads (it seeds them). An
// operator's generated config can list a hundred thousand routes, and
// decoding them is most of a CLI command's time; these commands skip them.
// The two lists are cut from the text before parsing (a top-level key at
// the start of a line, up to the next top-level key); whenever what is left
// does not parse or validate, the whole file is loaded as Load would, so an
// error reads exactly as run reports it. The returned Config's Groups and
// Routes are empty.
func LoadSettings(path string, getenv func(string) string) (Config, string, error) {
	explicit := path != ""
	if !explicit {
		path = "switchboard.yaml"
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		cfg, from, err := Load("", getenv)
		cfg.Groups, cfg.Routes = nil, nil
		return cfg, from, err
	}
	if err != nil {
		return Config{}, path, readError(err)
	}
	if cut, ok := cutLists(data); ok {
		if cfg, err := Parse(cut, getenv); err == nil {
			cfg.Groups, cfg.Routes = nil, nil
			return cfg, path, nil
		}
	}
	cfg, err := Parse(data, getenv)
	if err != nil {
		return cfg, path, fmt.Errorf("config %s: %w", path, err)
	}
	cfg.Groups, cfg.Routes = nil, nil
	return cfg, path, nil
}

// cutLists returns data without its top-level groups: and routes: blocks,
// and whether it cut anything. A block starts at a line "groups:" or
// "routes:" (the key at column 0 of a block mapping) and runs to the next
// line at column 0 that is neither a sequence item ("- ..."), a comment
// nor blank: the next top-level key or a document marker. A file written
// in flow style ({...} at the top) has no such line and is left whole.
func cutLists(data []byte) ([]byte, bool) {
	var out bytes.Buffer
	out.Grow(len(data))
	cutting, cut := false, false
	for rest := data; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		if topLevel(line) {
			cutting = bytes.HasPrefix(line, []byte("groups:")) || bytes.HasPrefix(line, []byte("routes:"))
			cut = cut || cutting
		}
		if !cutting {
			out.Write(line)
		}
	}
	return out.Bytes(), cut
}

// topLevel reports whether line starts something at column 0 other than
// a sequence item, a comment or a blank: a key or a document marker.
func topLevel(line []byte) bool {
	if len(line) == 0 {
		return false
	}
	switch line[0] {
	case ' ', '\t', '\r', '\n', '#', '-':
		return bytes.HasPrefix(line, []byte("---"))
	}
	return true
}
