package telegram

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/telegram/telegramtest"
)

// A file server's 429 is a rate limit waiting what its Retry-After says,
// and the next try gets the file; the file URL (it holds the token) shows
// in no error.
func TestDownloadRateLimited(t *testing.T) {
	f := telegramtest.New(t)
	f.AddFile("doc1", []byte("%PDF-1.7 report"))
	a := start(t, f, adaptertest.NewHost())
	f.RateLimitFiles(7)
	_, err := a.Download(t.Context(), adapters.Attachment{Ref: "doc1"})
	var ra *adapters.RetryAfterError
	if !errors.As(err, &ra) || ra.Wait != 7*time.Second {
		t.Fatalf("rate-limited download: %v; want a RetryAfterError of 7s", err)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("the error shows the token: %v", err)
	}
	rc, err := a.Download(t.Context(), adapters.Attachment{Ref: "doc1"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "%PDF-1.7 report" {
		t.Errorf("downloaded %q after the rate limit", b)
	}
}
