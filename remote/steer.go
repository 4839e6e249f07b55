package remote

import (
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"switchboard/agent"
)

// Steering a turn on its worker (agent.mid_turn: steer, agent.input:
// stream-json): each message the gateway's Steering takes goes to the
// worker on core NATS, inputPrefix<worker>.<turn> (only the gateway may
// publish there, only that worker read it: auth.go), numbered, with the
// message's id (its seq in the gateway's store). The worker writes them
// into the agent in order, answers on inputAckPrefix<worker>.<turn> (only
// it may publish there) how far it got, and lists the ids it wrote in the
// turn's outcome (Outcome.Steered). The gateway never waits for the
// answer: it publishes at once (Deliver stays fast), publishes again what
// is unanswered every inputResend (a message sent before the worker took
// the turn is read once it does), and settles by the outcome alone: a
// message the outcome does not list goes into the next turn, one it lists
// never again, whatever answers were lost.

const inputResend = 500 * time.Millisecond

func inputSubject(worker, turn string) string    { return inputPrefix + worker + "." + turn }
func inputAckSubject(worker, turn string) string { return inputAckPrefix + worker + "." + turn }

// wireInput is one steering message: Seq numbers a turn's inputs from 1,
// ID is the message's. wireInputAck is the worker's answer: it has
// handled inputs 1..Seq.
type wireInput struct {
	Seq  int    `json:"seq"`
	ID   int64  `json:"id"`
	Text string `json:"text"`
}

type wireInputAck struct {
	Seq int `json:"seq"`
}

// inputForwarder sends a turn's steering messages to its worker.
type inputForwarder struct {
	nc      *nats.Conn
	subject string
	mu      sync.Mutex
	sent    []wireInput // every input handed on, in order
	acked   int         // the worker answered inputs 1..acked
}

// forwardInputs makes steer hand its messages to worker's turn; the
// returned stop ends that (when the answers cannot be read, steer takes
// nothing, and messages queue).
func (r *Runner) forwardInputs(steer *agent.Steering, worker, turn string) (stop func()) {
	f := &inputForwarder{nc: r.nc, subject: inputSubject(worker, turn)}
	acks, err := r.nc.Subscribe(inputAckSubject(worker, turn), f.answered)
	if err != nil {
		r.log.Warn("follow a remote turn's steering answers; messages during it queue", "turn", turn, "worker", worker, "err", err)
		steer.Close()
		return func() {}
	}
	steer.Forward(f.send)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { f.resend(done) })
	return func() {
		steer.Close()
		close(done)
		wg.Wait()
		_ = acks.Unsubscribe()
	}
}

// send publishes a message, without waiting: the turn's outcome says
// whether the agent took it.
func (f *inputForwarder) send(id int64, text string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := wireInput{Seq: len(f.sent) + 1, ID: id, Text: text}
	f.sent = append(f.sent, in)
	f.publish(in) // a failure is published again by resend
	return true
}

func (f *inputForwarder) publish(in wireInput) {
	data, _ := json.Marshal(in)
	_ = f.nc.Publish(f.subject, data)
}

// answered notes how far the worker got.
func (f *inputForwarder) answered(m *nats.Msg) {
	var a wireInputAck
	if json.Unmarshal(m.Data, &a) != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if a.Seq > f.acked && a.Seq <= len(f.sent) {
		f.acked = a.Seq
	}
}

// resend publishes the unanswered inputs again, in order, every
// inputResend until done.
func (f *inputForwarder) resend(done <-chan struct{}) {
	t := time.NewTicker(inputResend)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		f.mu.Lock()
		for _, in := range f.sent[f.acked:] {
			f.publish(in)
		}
		f.mu.Unlock()
	}
}

// workerInputs takes the steering messages of one turn on the worker.
type workerInputs struct {
	mu   sync.Mutex
	last int
}

// takeInputs writes the steering messages of turn into steer, in order and
// each once (a resend is answered again, never written again), answering
// how far it got; the returned stop ends it. steer.Taken is then what the
// turn's outcome lists.
func (w *Worker) takeInputs(turn string, steer *agent.Steering) (stop func()) {
	in := &workerInputs{}
	ack := inputAckSubject(w.opt.ID, turn)
	sub, err := w.nc.Subscribe(inputSubject(w.opt.ID, turn), func(m *nats.Msg) {
		var msg wireInput
		if json.Unmarshal(m.Data, &msg) != nil {
			return
		}
		in.mu.Lock()
		if msg.Seq > in.last+1 {
			in.mu.Unlock()
			return // one before it was lost: its resend comes first
		}
		if msg.Seq == in.last+1 {
			steer.Send(msg.ID, msg.Text) // taken or not, Taken says
			in.last = msg.Seq
		}
		data, _ := json.Marshal(wireInputAck{Seq: in.last})
		in.mu.Unlock()
		if err := w.nc.Publish(ack, data); err != nil {
			w.log.Warn("answer a steering message", "turn", turn, "err", err)
		}
	})
	if err != nil {
		w.log.Warn("take a turn's steering messages; they queue for the next turn", "turn", turn, "err", strings.TrimSpace(err.Error()))
		return func() {}
	}
	return func() { _ = sub.Unsubscribe() }
}
