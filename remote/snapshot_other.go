//go:build !unix

package remote

import "io/fs"

const openFlags = 0

// stampOf is what stat says of a file that a change to it moves.
func stampOf(info fs.FileInfo) fileStamp {
	return fileStamp{size: info.Size(), mtime: info.ModTime().UnixNano(), mode: info.Mode()}
}
