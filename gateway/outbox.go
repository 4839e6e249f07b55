package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/ops"
	"switchboard/store"
)

const (
	maxSendAttempts = 8
	sendConcurrency = 16
	// outboxDrainTimeout bounds how long shutdown waits for the replies of
	// the drained turns to be delivered.
	outboxDrainTimeout = 5 * time.Second
)

// outbox is the one sender: it delivers outbox rows through the adapters, at
// most once each, oldest first per chat, retrying transient failures with
// backoff and failing permanently dead chats without blocking others.
type outbox struct {
	outboxDeps
	wakeC   chan struct{}
	sem     chan struct{}
	wg      sync.WaitGroup
	drainC  chan struct{} // closed by drain: deliver what is due, then stop
	stopped chan struct{} // closed when run returns
	once    sync.Once

	mu      sync.Mutex
	paused  map[string]time.Time     // platform -> end of its rate-limit pause
	waiters map[string]chan struct{} // outbox key -> closed when the item settles
	// paced holds the items deferred to their turn in the adapter's pacing
	// (not to a retry's backoff) until they are claimed: a drain sends
	// them, waiting in the adapter, instead of leaving them for the next
	// start.
	paced map[int64]bool
}

// outboxStore is what the outbox needs of the store: its rows' states.
type outboxStore interface {
	NextOutboxAt(ctx context.Context) (time.Time, bool, error)
	DueOutbox(ctx context.Context, now time.Time, limit int) ([]store.OutboxItem, error)
	OutboxDefer(ctx context.Context, id int64, next time.Time) error
	ClaimOutbox(ctx context.Context, id int64) (bool, error)
	OutboxSent(ctx context.Context, id int64, platformID adapters.MessageID, bot *store.Message) error
	OutboxPartSent(ctx context.Context, id int64, n int, platformID adapters.MessageID, bot *store.Message) error
	OutboxRetry(ctx context.Context, id int64, next time.Time, reason string) error
	OutboxFailed(ctx context.Context, id int64, reason string) error
	InsertMessage(ctx context.Context, m *store.Message) (bool, error) // a live reply's part (storeLivePart)
}

// outboxDeps is what the outbox works with.
type outboxDeps struct {
	st         outboxStore
	queue      func(context.Context, ops.SendRequest) (store.OutboxItem, error) // store a row (ops.QueueSend)
	adapters   adapterSet
	layout     groups.Layout                                               // group folders, for files sent
	live       *liveStarter                                                // the live replies the replies finish
	spoke      func(chat adapters.JID, topic string, folder groups.Folder) // the bot spoke for folder: follow-ups engage (engagements.start)
	deliveries *prometheus.CounterVec                                      // switchboard_outbox_deliveries_total
	rateLimits *prometheus.CounterVec                                      // switchboard_rate_limit_waits_total
	hooks      *testHooks
	log        *slog.Logger
}

func newOutbox(d outboxDeps) *outbox {
	return &outbox{outboxDeps: d, wakeC: make(chan struct{}, 1), sem: make(chan struct{}, sendConcurrency),
		drainC: make(chan struct{}), stopped: make(chan struct{}),
		paused: map[string]time.Time{}, waiters: map[string]chan struct{}{}, paced: map[int64]bool{}}
}

// send queues req (ops.QueueSend) and wakes the outbox: the one way
// anything the gateway says reaches a chat.
func (o *outbox) send(ctx context.Context, req ops.SendRequest) (store.OutboxItem, error) {
	it, err := o.queue(ctx, req)
	if err == nil {
		o.wake()
	}
	return it, err
}

func (o *outbox) wake() {
	select {
	case o.wakeC <- struct{}{}:
	default:
	}
}

// run delivers due items until ctx ends, or until drain was called and
// nothing is due any more (items waiting for a retry stay for the next start).
func (o *outbox) run(ctx context.Context) {
	defer close(o.stopped)
	defer o.live.abortAll(ctx) // their finals go out after the next start
	defer o.wg.Wait()
	for {
		claimed, refused := o.sendDue(ctx)
		if claimed == 0 && o.draining() {
			// A send in flight may make the next item of its chat due.
			o.wg.Wait()
			if n, _ := o.sendDue(ctx); n == 0 {
				return
			}
		}
		wait := time.Second
		if at, ok, err := o.st.NextOutboxAt(ctx); err == nil && ok && !refused {
			wait = min(wait, max(time.Until(at), 0))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-o.wakeC:
		case <-o.drainC:
		case <-t.C:
		}
		t.Stop()
	}
}

func (o *outbox) draining() bool {
	select {
	case <-o.drainC:
		return true
	default:
		return false
	}
}

// drain makes run deliver what is due now and stop; it waits up to timeout
// and reports whether run stopped in time. Call it after the turns drained,
// so that their replies reach the chats before the gateway exits.
func (o *outbox) drain(timeout time.Duration) bool {
	o.once.Do(func() { close(o.drainC) })
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-o.stopped:
		return true
	case <-t.C:
		return false
	}
}

// sendDue claims the due chat heads and starts their delivery; it returns
// how many it claimed, and whether the store refused a read or a claim (a
// full disk, say): run then waits before it tries again rather than spin
// on the items that are still due.
func (o *outbox) sendDue(ctx context.Context) (n int, refused bool) {
	now := time.Now()
	until := now
	draining := o.draining()
	if draining {
		// An item deferred to its turn in the pacing is due for a drain
		// if its turn comes within the drain's time.
		until = now.Add(outboxDrainTimeout)
	}
	items, err := o.st.DueOutbox(ctx, until, 256)
	if err != nil {
		if ctx.Err() == nil {
			o.log.Error("read outbox", "err", err)
		}
		return 0, true
	}
	for _, it := range items {
		if it.NextAttempt.After(now) && !o.wasPaced(it.ID) {
			continue // waiting for a retry: the next start sends it
		}
		if until := o.pausedUntil(it.ChatJID.Platform()); !until.IsZero() {
			// The platform is rate limited: wait without counting an attempt.
			if err := o.st.OutboxDefer(ctx, it.ID, until); err != nil && ctx.Err() == nil {
				o.log.Error("defer outbox item", "outbox", it.ID, "err", err)
			}
			continue
		}
		if p, ok := o.adapters[it.ChatJID.Platform()].(adapters.Pacer); ok && !draining {
			// Not its turn in the adapter's pacing yet: it waits queued, not
			// claimed, so that a crash meanwhile does not count it as sent.
			// (A shutdown's drain sends it, waiting in the adapter.)
			if d := p.SendDue(it.ChatJID); d > paceSlack {
				if err := o.st.OutboxDefer(ctx, it.ID, time.Now().Add(d)); err != nil && ctx.Err() == nil {
					o.log.Error("defer outbox item", "outbox", it.ID, "err", err)
				}
				o.setPaced(it.ID, true)
				continue
			}
		}
		o.live.step(liveStepQueued)
		// Claim only with a free sender in hand: a claimed row is
		// "sending", and one a crash leaves so is never resent.
		select {
		case o.sem <- struct{}{}:
		default:
			if h := o.hooks.senderWait; h != nil {
				h()
			}
			select {
			case o.sem <- struct{}{}:
			case <-ctx.Done():
				return n, refused
			}
		}
		claimed, err := o.st.ClaimOutbox(ctx, it.ID)
		if err == nil {
			o.setPaced(it.ID, false) // claimed now, or no longer queued
		}
		if err != nil || !claimed {
			<-o.sem
			if err != nil && ctx.Err() == nil {
				refused = true
				o.log.Error("claim outbox item", "jid", it.ChatJID, "outbox", it.ID, "err", err)
			}
			continue
		}
		n++
		it.Attempts++
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			defer func() { <-o.sem }()
			o.deliver(ctx, it)
			o.wake() // the chat's next reply may now be due
		}()
	}
	return n, refused
}

// setPaced records whether item id waits for its turn in the pacing.
func (o *outbox) setPaced(id int64, paced bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if paced {
		o.paced[id] = true
	} else {
		delete(o.paced, id)
	}
}

func (o *outbox) wasPaced(id int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.paced[id]
}

// deliver sends one claimed item and records the outcome.
func (o *outbox) deliver(ctx context.Context, it store.OutboxItem) {
	defer o.finished(it.Key)
	o.live.step(liveStepClaimed)
	chat := it.ChatJID
	a, ok := o.adapters[chat.Platform()]
	if !ok {
		o.fail(ctx, it, fmt.Errorf("%w: %s", adapters.ErrNoAdapter, chat.Platform()))
		return
	}
	asked := it.Topic // where the reply was addressed
	// All of a reply's parts go where it lands, and so does the bot's
	// stored message.
	it.Topic = replyTopic(a, adapters.Outbound{Chat: chat, Topic: it.Topic, ReplyTo: it.ReplyTo})
	sendCtx, cancel := context.WithTimeout(ctx, time.Minute)
	var id adapters.MessageID
	var bot *store.Message
	var err error
	if it.Kind == store.OutboxFile {
		id, bot, err = o.sendFile(sendCtx, a, it)
	} else {
		id, bot, err = o.sendText(sendCtx, a, it)
	}
	cancel()
	var ra *adapters.RetryAfterError
	switch {
	case err == nil:
		// The bot has spoken: follow-ups engage from now, before anyone
		// can see the message stored.
		if it.Folder != "" && it.Kind != store.OutboxNotice {
			o.spoke(it.ChatJID, it.Topic, it.Folder)
			if asked != it.Topic {
				o.spoke(it.ChatJID, asked, it.Folder) // the conversation it answered goes on too
			}
		}
		o.deliveries.WithLabelValues(o.adapters.platformLabel(chat), "sent").Inc()
		if !o.record(ctx, "record delivery", it, func(ctx context.Context) error { return o.st.OutboxSent(ctx, it.ID, id, bot) }) {
			o.live.take(it.Key) // its records stay: the next start sorts them out
			return
		}
		o.live.step(liveStepSent)
		o.live.delivered(ctx, it.Key)
		o.adapters.notifyStored(it.ChatJID, bot.Seq)
	case errors.Is(err, adapters.ErrPermanent) || errors.Is(err, adapters.ErrUnsupported) || errors.Is(err, adapters.ErrFormat):
		o.fail(ctx, it, err)
	case errors.As(err, &ra):
		o.rateLimits.WithLabelValues(chat.Platform()).Inc()
		o.pause(chat.Platform(), ra.Wait)
		if h := o.hooks.paused; h != nil {
			h(chat.Platform())
		}
		o.retry(ctx, it, ra.Wait, err)
	case it.Attempts >= maxSendAttempts:
		o.fail(ctx, it, fmt.Errorf("gave up after %d attempts: %w", it.Attempts, err))
	default:
		o.retry(ctx, it, min(time.Second<<it.Attempts, 5*time.Minute), err)
	}
}

// sendText sends a text item as the parts that fit the platform, from the
// first part not yet sent; every part but the last is recorded as it goes,
// the last is returned for OutboxSent to record.
func (o *outbox) sendText(ctx context.Context, a adapters.Adapter, it store.OutboxItem) (adapters.MessageID, *store.Message, error) {
	var lim adapters.Limits
	if l, ok := a.(adapters.Limiter); ok {
		lim = l.Limits()
	}
	parts := adapters.SplitRendered(it.Text, lim.MaxText, lim.Measure)
	var live *liveTurn // the turn's live reply, which may deliver the first parts
	if it.Kind == store.OutboxReply {
		live = o.live.take(it.Key)
		if live == nil {
			var err error
			if live, err = o.live.resume(ctx, a, it); err != nil {
				return "", nil, err
			}
		}
		if live != nil {
			// Kept until the row is settled: delivered drops its records,
			// a retry finds it again.
			defer o.live.putBack(it.Key, live)
			if it.PartsSent == 0 {
				live.reconcile(ctx, parts)
			}
		}
	}
	first := it.PlatformID
	for n := it.PartsSent; n < len(parts); n++ {
		out := adapters.Outbound{Chat: it.ChatJID, Text: parts[n], Topic: it.Topic, Key: it.Key}
		if n == 0 {
			out.ReplyTo = it.ReplyTo
		} else {
			out.Key = fmt.Sprintf("%s/%d", it.Key, n+1)
		}
		id, err := o.sendPart(ctx, a, live, n, out)
		if err != nil {
			return "", nil, err // a retry resumes at this part
		}
		if id == "" {
			id = adapters.MessageID("out-" + out.Key)
		}
		if first == "" {
			first = id
		}
		bot := o.botMessage(it, id, parts[n])
		if n == len(parts)-1 {
			return first, bot, nil
		}
		if err := o.st.OutboxPartSent(context.WithoutCancel(ctx), it.ID, n+1, id, bot); err != nil {
			return "", nil, fmt.Errorf("record part %d of %d: %w", n+1, len(parts), err)
		}
		o.adapters.notifyStored(it.ChatJID, bot.Seq)
	}
	return first, o.botMessage(it, first, ""), nil // every part was sent before a crash
}

// sendPart sends one part of a text item: a part of a reply whose turn's
// live reply is alive is delivered through it (the message the chat saw
// growing becomes the delivery; a part it finished mid-turn is delivered
// already); anything else is sent.
func (o *outbox) sendPart(ctx context.Context, a adapters.Adapter, live *liveTurn, n int, out adapters.Outbound) (adapters.MessageID, error) {
	if live != nil {
		id, ok, err := live.deliverPart(ctx, n, out.Text)
		if err != nil {
			return "", err
		}
		if ok {
			return id, nil
		}
	}
	return a.Send(ctx, out)
}

// storeLivePart stores a part of a reply that its live reply finished
// mid-turn, as the bot's message sent as id; delivering the reply stores
// it again (OutboxPartSent), which changes nothing: same chat, same id.
func (o *outbox) storeLivePart(ctx context.Context, out adapters.Outbound, id adapters.MessageID, text string) error {
	bot := o.botMessage(store.OutboxItem{ChatJID: out.Chat, Topic: out.Topic, ReplyTo: out.ReplyTo}, id, text)
	if _, err := o.st.InsertMessage(ctx, bot); err != nil {
		return err
	}
	o.adapters.notifyStored(out.Chat, bot.Seq)
	return nil
}

func (o *outbox) botMessage(it store.OutboxItem, id adapters.MessageID, text string) *store.Message {
	platform := it.ChatJID.Platform()
	return &store.Message{ChatJID: it.ChatJID, ID: id, Sender: o.adapters.botJID(platform), SenderName: "switchboard",
		Text: text, Topic: it.Topic, ReplyTo: it.ReplyTo, Verb: adapters.VerbMessage, FromBot: true, Time: time.Now()}
}

// sendFile opens the item's file inside its folder at send time (regular
// files only, without following a symlink out or blocking on a FIFO) and
// hands the open file to the adapter: no path ever reaches it.
func (o *outbox) sendFile(ctx context.Context, a adapters.Adapter, it store.OutboxItem) (adapters.MessageID, *store.Message, error) {
	fs, ok := a.(adapters.FileSender)
	if !ok {
		return "", nil, adapters.Unsupported(a.Name(), "send_file")
	}
	f, fi, err := openGroupFile(o.layout, it.Folder, it.FilePath)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", adapters.ErrPermanent, err)
	}
	defer f.Close()
	name := filepath.Base(it.FilePath)
	file := adapters.File{Name: name, MIME: mime.TypeByExtension(filepath.Ext(name)), Size: fi.Size(), Content: f}
	id, err := fs.SendFile(ctx, adapters.Outbound{Chat: it.ChatJID, Text: it.Text, Topic: it.Topic, ReplyTo: it.ReplyTo, Key: it.Key}, file)
	if err != nil {
		return "", nil, err
	}
	if id == "" {
		id = adapters.MessageID("out-" + it.Key)
	}
	bot := o.botMessage(it, id, it.Text)
	bot.Attachments = []adapters.Attachment{{Name: name, MIME: file.MIME, Size: file.Size}}
	return id, bot, nil
}

// openGroupFile opens rel inside folder's directory through os.Root
// (groups.Layout.OpenRoot), without blocking on a FIFO, and refuses
// anything but a regular file.
func openGroupFile(layout groups.Layout, folder groups.Folder, rel string) (*os.File, os.FileInfo, error) {
	root, err := layout.OpenRoot(folder)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", rel, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", rel)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// pause holds every send of platform for wait: a rate limit applies to the
// whole bot, not to one chat.
func (o *outbox) pause(platform string, wait time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	until := time.Now().Add(wait)
	if until.After(o.paused[platform]) {
		o.paused[platform] = until
	}
}

// pausedUntil is when platform's rate-limit pause ends (zero: not paused).
func (o *outbox) pausedUntil(platform string) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.paused[platform]
	if time.Now().After(t) {
		delete(o.paused, platform)
		return time.Time{}
	}
	return t
}

// await returns a channel closed when the item with key is next settled
// (sent, failed, or put back for a retry), and forget, which the waiter
// calls when it stops waiting: a wait it gave up on, or one for an item
// that had settled already, is not kept.
func (o *outbox) await(key string) (settled <-chan struct{}, forget func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ch, ok := o.waiters[key]
	if !ok {
		ch = make(chan struct{})
		o.waiters[key] = ch
	}
	return ch, func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.waiters[key] == ch {
			delete(o.waiters, key)
		}
	}
}

func (o *outbox) finished(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch, ok := o.waiters[key]; ok {
		close(ch)
		delete(o.waiters, key)
	}
}

func (o *outbox) retry(ctx context.Context, it store.OutboxItem, wait time.Duration, cause error) {
	o.deliveries.WithLabelValues(o.adapters.platformLabel(it.ChatJID), "retried").Inc()
	o.log.Warn("delivery will be retried", "jid", it.ChatJID, "outbox", it.ID, "attempt", it.Attempts, "wait", wait, "err", cause)
	next := time.Now().Add(wait)
	o.record(ctx, "record delivery retry", it, func(ctx context.Context) error { return o.st.OutboxRetry(ctx, it.ID, next, cause.Error()) })
}

// record writes a claimed item's outcome, again and again while the store
// refuses it (a full disk, say, until the operator frees space): a row
// left "sending" is never sent again by this run, and the replies queued
// behind it in its chat would wait for the next start. It gives up only
// when ctx ends or the store refuses the write for good (recordUntil; the
// next start settles the row, store.RecoverOutbox) and reports whether
// the outcome was recorded.
func (o *outbox) record(ctx context.Context, what string, it store.OutboxItem, write func(context.Context) error) bool {
	return recordUntil(ctx, o.log, what, write, "jid", it.ChatJID, "outbox", it.ID) == nil
}

// paceSlack is the wait for an adapter's pacing (adapters.Pacer) that an
// item is claimed through: shorter than a write to defer it.
const paceSlack = 50 * time.Millisecond

// The waits between attempts to record an outcome (recordUntil).
const (
	recordRetryFirst = 100 * time.Millisecond
	recordRetryMax   = 10 * time.Second
)

// recordUntil writes an outcome the store must hold (a turn's record, a
// delivery's), again and again while the store refuses it, the waits
// doubling from recordRetryFirst to recordRetryMax, each failure logged
// as what with attrs. It gives up, returning the last error, when ctx
// ends or when the store refuses the write for good (store.Permanent: a
// constraint, a row that is gone), which no later try can change and
// which would hold its worker or sender until shutdown; the write itself
// runs without ctx's cancellation.
func recordUntil(ctx context.Context, log *slog.Logger, what string, write func(context.Context) error, attrs ...any) error {
	wait := recordRetryFirst
	for {
		err := write(context.WithoutCancel(ctx))
		if err == nil {
			return nil
		}
		if store.Permanent(err) {
			log.Error(what+"; not retried: the store refuses it for good", append(attrs, "err", err)...)
			return err
		}
		if ctx.Err() != nil {
			log.Error(what, append(attrs, "err", err)...)
			return err
		}
		log.Error(what+"; retrying", append(attrs, "wait", wait, "err", err)...)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		wait = min(2*wait, recordRetryMax)
	}
}

func (o *outbox) fail(ctx context.Context, it store.OutboxItem, cause error) {
	o.deliveries.WithLabelValues(o.adapters.platformLabel(it.ChatJID), "failed").Inc()
	o.log.Warn("delivery failed permanently", "jid", it.ChatJID, "outbox", it.ID, "err", cause)
	o.live.discard(ctx, it.Key)
	o.record(ctx, "record delivery failure", it, func(ctx context.Context) error { return o.st.OutboxFailed(ctx, it.ID, cause.Error()) })
}
