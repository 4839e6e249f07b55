package adapters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// HTTPFile is one attachment a platform's Downloader fetches over HTTP.
type HTTPFile struct {
	// Platform names the adapter in errors ("discord").
	Platform string
	// URL is fetched with GET. It never appears in an error: it may hold a
	// token (Telegram's file links do).
	URL string
	// Header is sent with the request (Slack's Authorization).
	Header http.Header
	// Client does the request; nil: http.DefaultClient. Its CheckRedirect,
	// if any, still runs after Allowed.
	Client *http.Client
	// Allowed, when set, is the host allow-list: it vets the URL before
	// anything is sent and every redirect before it is followed. Its error
	// says why not ("not on Discord's CDN"); nothing is fetched from there.
	Allowed func(*url.URL) error
	// MaxBytes caps the file: a larger Content-Length is refused before the
	// body is read, and reading past it fails. 0: no cap (the gateway caps
	// what it reads at adapters.max_download_mb in any case).
	MaxBytes int64
}

// DownloadHTTP fetches f for a Downloader and returns its body; the caller
// closes it. Until ctx ends. Errors are the adapters' kinds: a 429 is a
// *RetryAfterError waiting what its Retry-After header says; 408, 425 and
// 5xx answers and connection errors are transient; a refused URL, a file
// over the cap and any other status wrap ErrPermanent.
func DownloadHTTP(ctx context.Context, f HTTPFile) (io.ReadCloser, error) {
	u, err := url.Parse(f.URL)
	if err != nil {
		return nil, fmt.Errorf("%s: download: the attachment URL does not parse: %w", f.Platform, ErrPermanent)
	}
	if f.Allowed != nil {
		if err := f.Allowed(u); err != nil {
			return nil, fmt.Errorf("%s: download: %w; not fetched: %w", f.Platform, err, ErrPermanent)
		}
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: download: the attachment URL is not an http(s) URL: %w", f.Platform, ErrPermanent)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: download: %w", f.Platform, err)
	}
	for k, vs := range f.Header {
		req.Header[k] = vs
	}
	client := http.DefaultClient
	if f.Client != nil {
		client = f.Client
	}
	if f.Allowed != nil {
		c := *client
		next := c.CheckRedirect
		c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			if err := f.Allowed(req.URL); err != nil {
				return &refused{fmt.Errorf("redirected: %w", err)}
			}
			if next != nil {
				return next(req, via)
			}
			return nil
		}
		client = &c
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL stays out
		}
		var r *refused
		if errors.As(err, &r) {
			return nil, fmt.Errorf("%s: download: %w; not fetched: %w", f.Platform, r.err, ErrPermanent)
		}
		return nil, fmt.Errorf("%s: download: %w", f.Platform, err)
	}
	switch code := resp.StatusCode; {
	case code == http.StatusOK:
	case code == http.StatusTooManyRequests:
		resp.Body.Close()
		return nil, &RetryAfterError{Wait: RetryAfter(resp.Header)}
	case code == http.StatusRequestTimeout || code == http.StatusTooEarly || code >= 500:
		resp.Body.Close()
		return nil, fmt.Errorf("%s: download: HTTP %d", f.Platform, code)
	default:
		resp.Body.Close()
		return nil, fmt.Errorf("%s: download: HTTP %d: %w", f.Platform, code, ErrPermanent)
	}
	if f.MaxBytes > 0 && resp.ContentLength > f.MaxBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: download: %d bytes: %w (%d bytes): %w", f.Platform, resp.ContentLength, ErrTooLarge, f.MaxBytes, ErrPermanent)
	}
	if f.MaxBytes > 0 {
		return &capped{ReadCloser: resp.Body, left: f.MaxBytes, platform: f.Platform, max: f.MaxBytes}, nil
	}
	return resp.Body, nil
}

// refused is an Allowed refusal of a redirect, told apart from the
// client's other errors.
type refused struct{ err error }

func (r *refused) Error() string { return r.err.Error() }

// capped fails a read past the cap instead of handing on more.
type capped struct {
	io.ReadCloser
	left     int64
	max      int64
	platform string
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more says whether the body really goes on.
		var b [1]byte
		n, err := c.ReadCloser.Read(b[:])
		if n > 0 {
			return 0, fmt.Errorf("%s: download: %w (%d bytes): %w", c.platform, ErrTooLarge, c.max, ErrPermanent)
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	return n, err
}
