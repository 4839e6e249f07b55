package adapters

import "context"

// LiveMode is how a live reply shows on its platform, which says how to
// clean it up when the gateway died before finishing it.
type LiveMode string

const (
	// LiveEdit: a message sent and edited in place. Left over, it is
	// deleted (Deleter), or else edited to a short marker (Editor).
	LiveEdit LiveMode = "edit"
	// LiveStream: a platform stream (Slack's chat.startStream). Left
	// over, it is stopped (LiveEnder), then cleaned up as LiveEdit.
	LiveStream LiveMode = "stream"
	// LiveDraft: a draft the platform drops by itself (a Telegram
	// private-chat draft, a web chat draft): nothing to clean up.
	LiveDraft LiveMode = "draft"
	// LiveEditButtons: a LiveEdit message that carries buttons while it
	// runs (a live reply with its Stop button, ButtonCarrier). Left over,
	// it is deleted (Deleter), or else edited to a marker without its
	// buttons (Buttons.EditButtons).
	LiveEditButtons LiveMode = "edit-buttons"
	// LiveButtons: a message with buttons shown while a turn runs (its
	// Stop button). Left over, it is deleted (Deleter), or else its
	// buttons are removed (Buttons.EditButtons).
	LiveButtons LiveMode = "buttons"
)

// LiveShown is implemented by a LiveReply that can say where it shows, so
// that the gateway can record it while the turn runs and clean it up at
// its next start if it was killed mid-stream.
type LiveShown interface {
	// Shown returns the message the live reply shows and its mode; ok is
	// false while it shows nothing. It does not block.
	Shown() (ref MessageRef, mode LiveMode, ok bool)
}

// LiveEnder is implemented by adapters whose live replies need more than a
// Delete or Edit to end when the live reply object is gone (after a
// restart): a Slack stream is stopped. EndLive ends what ref shows in
// mode; an error is as Send's.
type LiveEnder interface {
	EndLive(ctx context.Context, ref MessageRef, mode LiveMode) error
}

// Shown implements LiveShown: the message sent, once there is one, until
// Finish or Abort ended it.
func (e *EditLive) Shown() (MessageRef, LiveMode, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	mode := LiveEdit
	if e.carries() {
		mode = LiveEditButtons
	}
	return e.ref(), mode, e.id != "" && !e.finished && !e.aborted
}
