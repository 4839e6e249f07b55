package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/store"
)

// defaultMaxDownload caps one attachment fetched into a group folder.
const defaultMaxDownload = 25 << 20

// downloadTimeout bounds one attachment's download.
const downloadTimeout = 2 * time.Minute

type fileKey struct {
	seq int64
	i   int
}

// fetched is where an attachment landed in the group folder (path, relative
// to it) or why it could not be fetched (err).
type fetched struct {
	path, err string
	size      int64 // bytes in the file at path (the platform's stated size can be missing or stale)
}

// fetcher downloads the attachments of a turn's messages into its group
// folder.
type fetcher struct {
	adapters    adapterSet
	layout      groups.Layout
	maxDownload int64 // Options.MaxDownload
	downloads   downloadLog
	log         *slog.Logger
}

// fetch downloads the attachments of the batch's messages into
// the folder's inbox before the turn, through the chat adapter's Downloader.
// A failure is reported in the prompt, never fatal to the turn.
func (f *fetcher) fetch(ctx context.Context, b store.Batch) map[fileKey]fetched {
	var out map[fileKey]fetched
	var root *os.Root
	for _, m := range append(b.Observed[:len(b.Observed):len(b.Observed)], b.Messages...) {
		for i, a := range m.Attachments {
			if out == nil {
				out = map[fileKey]fetched{}
				r, err := f.layout.OpenRoot(b.Folder)
				if err != nil {
					f.log.Error("open group folder for downloads", "folder", b.Folder, "err", err)
				} else {
					root = r
					defer root.Close()
				}
			}
			res := fetched{err: "the group folder could not be opened"}
			if root != nil {
				res = f.fetchOne(ctx, root, b.Folder, m, i, a)
			}
			if res.err != "" {
				f.log.Warn("attachment not fetched", "folder", b.Folder, "jid", m.ChatJID, "msg_id", m.ID, "err", res.err)
			}
			out[fileKey{m.Seq, i}] = res
		}
	}
	return out
}

func (f *fetcher) fetchOne(ctx context.Context, root *os.Root, folder groups.Folder, m store.Message, i int, a adapters.Attachment) fetched {
	platform := m.ChatJID.Platform()
	dl, ok := f.adapters[platform].(adapters.Downloader)
	switch {
	case !ok:
		return fetched{err: fmt.Sprintf("the %s adapter cannot download files", platform)}
	case a.Ref == "":
		return fetched{err: "the platform gave no way to fetch this file"}
	}
	limit := f.maxDownload
	mb := fmt.Sprintf("%d-byte cap (adapters.max_download_mb)", limit)
	if limit%(1<<20) == 0 {
		mb = fmt.Sprintf("%d MB cap (adapters.max_download_mb)", limit>>20)
	}
	if a.Size > limit {
		return fetched{err: fmt.Sprintf("%d bytes is over the %s", a.Size, mb)}
	}
	dir := "inbox/" + m.Time.UTC().Format("2006-01-02")
	// The attachment's identity: its chat, message and place in the message
	// (platform ids are unique per chat only: Telegram counts per chat).
	key := fmt.Sprintf("%s\x00%s\x00%s\x00%d", folder, m.ChatJID, m.ID, i)
	rel, same := f.downloads.same(root, key)
	switch {
	case same:
		// Fetched by an earlier attempt of this batch.
		if fi, err := root.Stat(rel); err == nil {
			return fetched{path: rel, size: fi.Size()}
		}
		return fetched{path: rel}
	case rel != "":
		// Fetched before, and changed since: fetched again, at the same path.
	default:
		// The contract's name, <msg id>-<name>, while no other file holds
		// it; else one unique per chat, message and attachment.
		rel = dir + "/" + safeName(m.ID.String(), "msg") + "-" + safeName(a.Name, "file")
		if _, err := root.Lstat(rel); err == nil {
			rel = dir + "/" + attachmentName(m, i, a.Name)
		}
	}
	if err := root.MkdirAll(dir, 0o700); err != nil {
		return fetched{err: "create " + dir + ": " + scrub(err)}
	}
	dctx, cancel := context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
	rc, err := fetchFile(dctx, dl, a)
	if err != nil {
		return fetched{err: "download: " + scrub(err)}
	}
	defer rc.Close()
	// A dot name: no attachment's own name starts with one (safeName), so
	// the partial file of one never lands on another's ("x" and "x.part"
	// in one message).
	part := path.Dir(rel) + "/." + path.Base(rel) + ".part"
	// Whatever the agent left at the partial file's path (a FIFO would
	// block the open, and this turn's slot with it, for good) goes; the
	// file is created afresh, never opened through what is there.
	_ = root.Remove(part)
	out, err := root.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fetched{err: "write " + rel + ": " + scrub(err)}
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, sum), io.LimitReader(rc, limit+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		err = errors.New("download: " + scrub(err))
	case n > limit:
		err = fmt.Errorf("stopped at the %s", mb)
	default:
		err = root.Rename(part, rel)
	}
	if err != nil {
		_ = root.Remove(part)
		return fetched{err: err.Error()}
	}
	f.downloads.record(key, download{path: rel, size: n, sum: [sha256.Size]byte(sum.Sum(nil))})
	return fetched{path: rel, size: n}
}

// attachmentName is the file name of attachment i of m when the plain
// <msg id>-<name> is taken: the message's store sequence number is unique
// per chat and message (platform ids are not), and the index keeps apart
// two attachments whose names sanitize alike ("a b.txt", "a_b.txt").
func attachmentName(m store.Message, i int, name string) string {
	return fmt.Sprintf("%s-%d-%d-%s", safeName(m.ID.String(), "msg"), m.Seq, i+1, safeName(name, "file"))
}

// download is what a completed download wrote, and where.
type download struct {
	path string // relative to the group folder
	size int64
	sum  [sha256.Size]byte
}

// downloadLog remembers the attachments this process downloaded, so that a
// retried batch reuses a file only when it is still exactly what was
// downloaded (the agent may have changed or replaced it). Forgetting is
// safe: the file is downloaded again.
type downloadLog struct {
	mu sync.Mutex
	m  map[string]download // by folder, chat, message id and index
}

// maxDownloadLog bounds the log; past it, an arbitrary entry is dropped.
const maxDownloadLog = 4096

func (l *downloadLog) record(key string, d download) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]download{}
	}
	if len(l.m) >= maxDownloadLog {
		for k := range l.m {
			delete(l.m, k)
			break
		}
	}
	l.m[key] = d
}

// same returns where this process downloaded the attachment key ("" if it
// did not), and whether the file there is still a regular file with the
// size and content it downloaded.
func (l *downloadLog) same(root *os.Root, key string) (string, bool) {
	l.mu.Lock()
	d, ok := l.m[key]
	l.mu.Unlock()
	if !ok {
		return "", false
	}
	if fi, err := root.Lstat(d.path); err != nil || !fi.Mode().IsRegular() || fi.Size() != d.size {
		return d.path, false
	}
	// Not blocking: a FIFO swapped in after the Lstat would hang the open.
	f, err := root.OpenFile(d.path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return d.path, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return d.path, false
	}
	sum := sha256.New()
	if n, err := io.Copy(sum, io.LimitReader(f, d.size+1)); err != nil || n != d.size {
		return d.path, false
	}
	return d.path, [sha256.Size]byte(sum.Sum(nil)) == d.sum
}

// maxSafeName bounds a name made by safeName, in bytes.
const maxSafeName = 80

// maxKeptExt is the longest extension a shortened name keeps, in bytes.
const maxKeptExt = 16

// safeName makes s usable as one path segment: letters (any script),
// digits, '.', '-' and '_' are kept, everything else (separators, spaces,
// controls, bidi marks) becomes '_'; no leading dots; bounded length. A
// name cut short keeps its extension, so the file is still the kind of
// file it was (report….pdf, not report…).
func safeName(s, fallback string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), unicode.Is(unicode.Mn, r), r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := strings.TrimLeft(b.String(), ".")
	if len(out) > maxSafeName {
		ext := ""
		if i := strings.LastIndexByte(out, '.'); i > 0 && len(out)-i <= maxKeptExt {
			ext = out[i:]
		}
		cut := maxSafeName - len(ext)
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut] + ext
	}
	if out == "" {
		return fallback
	}
	return out
}

var urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"']+`)

// scrub removes URLs from an error before it reaches a log or a prompt:
// platform file URLs can carry the bot token (Telegram) or a signature.
func scrub(err error) string { return urlPattern.ReplaceAllString(err.Error(), "[url]") }

// downloadTries bounds how often one attachment is asked for when the
// platform keeps rate-limiting it.
const downloadTries = 3

// fetchFile asks the adapter for a file, waiting out the rate limits the
// platform reports (adapters.RetryAfterError) while ctx's deadline allows,
// at most downloadTries times.
func fetchFile(ctx context.Context, dl adapters.Downloader, a adapters.Attachment) (io.ReadCloser, error) {
	for try := 1; ; try++ {
		rc, err := dl.Download(ctx, a)
		var limited *adapters.RetryAfterError
		if err == nil || try == downloadTries || !errors.As(err, &limited) {
			return rc, err
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < limited.Wait {
			return nil, err
		}
		t := time.NewTimer(limited.Wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}
