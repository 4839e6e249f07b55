package discord

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/bwmarrin/discordgo"

	"switchboard/adapters"
)

// maxDownload bounds an attachment: the most Discord lets anyone upload.
const maxDownload = 500 << 20

// onCDN says whether u is where Discord serves attachments from (https on
// discordapp.com, discordapp.net or discord.com and their subdomains), or
// on the api_url's own host when one is set. Anything else, a service on
// the gateway's loopback or network above all, is never fetched: the
// attachment's URL comes from the platform, and what is fetched lands in
// a group folder.
func (a *Adapter) onCDN(u *url.URL) error {
	if a.opt.APIURL != "" {
		if base, err := url.Parse(a.opt.APIURL); err == nil && u.Scheme == base.Scheme && u.Host == base.Host {
			return nil
		}
	}
	if u.Scheme == "https" && u.Port() == "" {
		h := strings.ToLower(u.Hostname())
		for _, d := range []string{"discordapp.com", "discordapp.net", "discord.com"} {
			if h == d || strings.HasSuffix(h, "."+d) {
				return nil
			}
		}
	}
	return fmt.Errorf("the attachment URL is not on Discord's CDN (host %q)", u.Host)
}

// Download re-reads the message for a fresh attachment URL (Discord's CDN
// links expire) and fetches it.
func (a *Adapter) Download(ctx context.Context, att adapters.Attachment) (io.ReadCloser, error) {
	s, err := a.session()
	if err != nil {
		return nil, err
	}
	parts := strings.Split(att.Ref, "/")
	if len(parts) != 3 {
		return nil, fmt.Errorf("discord: malformed attachment reference")
	}
	m, err := s.ChannelMessage(parts[0], parts[1], discordgo.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("discord: read the attachment's message: %w", err)
	}
	i := slices.IndexFunc(m.Attachments, func(x *discordgo.MessageAttachment) bool { return x.ID == parts[2] })
	if i < 0 {
		return nil, fmt.Errorf("discord: the attachment was removed from its message")
	}
	return adapters.DownloadHTTP(ctx, adapters.HTTPFile{Platform: platform, URL: m.Attachments[i].URL, Client: a.http,
		Allowed: a.onCDN, MaxBytes: maxDownload})
}
