package adapters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// What DownloadHTTP makes of each answer a file server can give: the body,
// a rate limit with its wait, a transient or a permanent failure; and the
// URL (which may hold a token) in no error.
func TestDownloadHTTPAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, "the file")
		case "/auth":
			if r.Header.Get("Authorization") != "Bearer t0k" {
				http.Error(w, "sign in", http.StatusForbidden)
				return
			}
			fmt.Fprint(w, "private file")
		case "/429":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/429-fraction":
			w.Header().Set("Retry-After", "2.5")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/429-day":
			w.Header().Set("Retry-After", "86400")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/429-bare":
			w.WriteHeader(http.StatusTooManyRequests)
		case "/429-date":
			w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusTooManyRequests)
		case "/404":
			http.NotFound(w, r)
		case "/503":
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	const secret = "bot123:SECRET"
	type want int
	const (
		body want = iota
		retry
		transient
		permanent
	)
	for _, tc := range []struct {
		name, path string
		header     http.Header
		want       want
		wait       time.Duration // retry: at least
		waitMax    time.Duration // retry: at most
		text       string        // body: the content
	}{
		{name: "200", path: "/ok", want: body, text: "the file"},
		{name: "header sent", path: "/auth", header: http.Header{"Authorization": {"Bearer t0k"}}, want: body, text: "private file"},
		{name: "429 honours Retry-After seconds", path: "/429", want: retry, wait: 7 * time.Second, waitMax: 7 * time.Second},
		{name: "429 with a fraction", path: "/429-fraction", want: retry, wait: 2500 * time.Millisecond, waitMax: 2500 * time.Millisecond},
		{name: "429 asking for a day waits MaxRetryAfter", path: "/429-day", want: retry, wait: MaxRetryAfter, waitMax: MaxRetryAfter},
		{name: "429 without Retry-After waits a second", path: "/429-bare", want: retry, wait: time.Second, waitMax: time.Second},
		{name: "429 with a date", path: "/429-date", want: retry, wait: 80 * time.Second, waitMax: 90 * time.Second},
		{name: "404 is permanent", path: "/404", want: permanent},
		{name: "403 is permanent", path: "/auth", want: permanent},
		{name: "503 is transient", path: "/503", want: transient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := DownloadHTTP(t.Context(), HTTPFile{Platform: "test", URL: srv.URL + tc.path + "?token=" + secret, Header: tc.header})
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the URL's token: %v", err)
			}
			var ra *RetryAfterError
			switch tc.want {
			case body:
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(rc)
				rc.Close()
				if string(b) != tc.text {
					t.Errorf("read %q, want %q", b, tc.text)
				}
			case retry:
				if !errors.As(err, &ra) {
					t.Fatalf("err %v; want a *RetryAfterError", err)
				}
				if ra.Wait < tc.wait || ra.Wait > tc.waitMax {
					t.Errorf("wait %s; want %s..%s", ra.Wait, tc.wait, tc.waitMax)
				}
			case transient:
				if err == nil || errors.Is(err, ErrPermanent) || errors.As(err, &ra) {
					t.Errorf("err %v; want a transient error", err)
				}
			case permanent:
				if !errors.Is(err, ErrPermanent) {
					t.Errorf("err %v; want one wrapping ErrPermanent", err)
				}
			}
		})
	}
}

// A file over the cap is refused by its Content-Length before the body is
// read, and a body that goes on past the cap (no length given) fails the
// read; a file of exactly the cap passes.
func TestDownloadHTTPCap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data := strings.Repeat("x", 100)
		if r.URL.Path == "/chunked" {
			w.Write([]byte(data[:50]))
			w.(http.Flusher).Flush() // no Content-Length now
			w.Write([]byte(data[50:]))
			return
		}
		w.Header().Set("Content-Length", "100")
		w.Write([]byte(data))
	}))
	defer srv.Close()

	_, err := DownloadHTTP(t.Context(), HTTPFile{Platform: "test", URL: srv.URL + "/sized", MaxBytes: 99})
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrPermanent) {
		t.Errorf("100 bytes with a 99-byte cap: %v; want ErrTooLarge, permanent", err)
	}
	rc, err := DownloadHTTP(t.Context(), HTTPFile{Platform: "test", URL: srv.URL + "/chunked", MaxBytes: 99})
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, rc)
	rc.Close()
	if !errors.Is(err, ErrTooLarge) || n > 99 {
		t.Errorf("a 100-byte body without a length under a 99-byte cap: read %d bytes, err %v; want at most 99 and ErrTooLarge", n, err)
	}
	for _, path := range []string{"/sized", "/chunked"} {
		rc, err := DownloadHTTP(t.Context(), HTTPFile{Platform: "test", URL: srv.URL + path, MaxBytes: 100})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || len(b) != 100 {
			t.Errorf("%s: 100 bytes under a 100-byte cap: read %d, err %v", path, len(b), err)
		}
	}
}

// Allowed vets the URL and every redirect: a refused host is never asked,
// and the refusal says why.
func TestDownloadHTTPAllowed(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		fmt.Fprint(w, "internal secrets")
	}))
	defer other.Close()
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/file", http.StatusFound)
		default:
			fmt.Fprint(w, "the file")
		}
	}))
	defer cdn.Close()
	cdnURL, _ := url.Parse(cdn.URL)
	allowed := func(u *url.URL) error {
		if u.Host != cdnURL.Host {
			return fmt.Errorf("host %q is not the CDN", u.Host)
		}
		return nil
	}
	get := func(u string) (string, error) {
		rc, err := DownloadHTTP(t.Context(), HTTPFile{Platform: "test", URL: u, Allowed: allowed})
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), err
	}
	for _, u := range []string{other.URL + "/", cdn.URL + "/away", "file:///etc/passwd", "not a url"} {
		if _, err := get(u); !errors.Is(err, ErrPermanent) {
			t.Errorf("%s: %v; want a permanent refusal", u, err)
		} else if strings.HasPrefix(u, "http") && !strings.Contains(err.Error(), "is not the CDN") {
			t.Errorf("%s: %v; want the allow-list's reason", u, err)
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the host off the allow-list was asked %d times", n)
	}
	if b, err := get(cdn.URL + "/here"); err != nil || b != "the file" {
		t.Errorf("a redirect on the CDN: %q, %v", b, err)
	}
}

// The download ends with ctx.
func TestDownloadHTTPContext(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := DownloadHTTP(ctx, HTTPFile{Platform: "test", URL: srv.URL})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v; want context.Canceled", err)
	}
}
