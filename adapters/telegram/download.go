package telegram

import (
	"context"
	"fmt"
	"io"

	"github.com/go-telegram/bot"

	"switchboard/adapters"
)

// maxDownload is the largest file a Bot API server serves: a local one
// (api_url) up to 2,000 MB; api.telegram.org refuses getFile over 20 MB
// itself.
const maxDownload = 2000 << 20

// Download fetches an attachment by its file id (getFile, then the file
// URL, which holds the token and so never leaves this function).
func (a *Adapter) Download(ctx context.Context, att adapters.Attachment) (io.ReadCloser, error) {
	b, err := a.client()
	if err != nil {
		return nil, err
	}
	f, err := b.GetFile(ctx, &bot.GetFileParams{FileID: att.Ref})
	if err != nil {
		return nil, classify("", fmt.Errorf("getFile: %w", err))
	}
	return adapters.DownloadHTTP(ctx, adapters.HTTPFile{Platform: platform, URL: b.FileDownloadLink(f), Client: a.http, MaxBytes: maxDownload})
}
