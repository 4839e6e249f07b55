package slack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"switchboard/adapters"
)

// maxDownload bounds an attachment: the largest file Slack takes.
const maxDownload = 1 << 30

// Download fetches an attachment: files.info gives the private download URL,
// fetched with the bot token in the Authorization header (never in the ref),
// and only from Slack: onSlack vets the URL and every redirect.
func (a *Adapter) Download(ctx context.Context, att adapters.Attachment) (io.ReadCloser, error) {
	if err := a.tiers.wait(ctx, "files.info", ""); err != nil {
		return nil, err
	}
	f, _, _, err := a.api.GetFileInfoContext(ctx, att.Ref, 0, 0)
	if err != nil {
		return nil, classify("download", adapters.JID("slack:file/"+att.Ref), err)
	}
	u := f.URLPrivateDownload
	if u == "" {
		u = f.URLPrivate
	}
	return adapters.DownloadHTTP(ctx, adapters.HTTPFile{Platform: "slack", URL: u, Client: httpClient, MaxBytes: maxDownload,
		Header: http.Header{"Authorization": {"Bearer " + a.opt.BotToken}}, Allowed: a.onSlack})
}

// onSlack says whether u may receive the bot token: https on a Slack
// domain, or the configured API host (adapters.slack.api_url).
func (a *Adapter) onSlack(u *url.URL) error {
	h := strings.ToLower(u.Hostname())
	if u.Scheme == "https" && (h == "slack.com" || strings.HasSuffix(h, ".slack.com")) {
		return nil
	}
	if a.opt.APIURL != "" {
		if api, err := url.Parse(a.opt.APIURL); err == nil && api.Scheme == u.Scheme && strings.EqualFold(api.Host, u.Host) {
			return nil
		}
	}
	return fmt.Errorf("the file's URL is not on Slack (host %q): the bot token is not sent there", u.Host)
}

// httpClient is the client for file transfers.
var httpClient = &http.Client{Timeout: 5 * time.Minute}
