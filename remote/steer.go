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
// publish there, only that worker read it: auth.go), numbered; the worker
// writes them into the agent in order and answers each on
// inputAckPrefix<worker>.<turn> (only it may publish there) whether the
// agent took it. No answer within inputAckWait counts as not taken: the
// gateway then queues the message for the next turn.

const inputAckWait = 3 * time.Second

func inputSubject(worker, turn string) string    { return inputPrefix + worker + "." + turn }
func inputAckSubject(worker, turn string) string { return inputAckPrefix + worker + "." + turn }

// wireInput is one steering message; wireInputAck the worker's answer.
type wireInput struct {
	Seq  int    `json:"seq"`
	Text string `json:"text"`
}

type wireInputAck struct {
	Seq int  `json:"seq"`
	OK  bool `json:"ok"`
}

// inputForwarder sends a turn's steering messages to its worker.
type inputForwarder struct {
	nc      *nats.Conn
	subject string
	acks    *nats.Subscription
	seq     int
}

// forwardInputs makes steer hand its messages to worker's turn; the
// returned stop ends that (nil when the acks cannot be read: steer then
// takes nothing, and messages queue).
func (r *Runner) forwardInputs(steer *agent.Steering, worker, turn string) (stop func()) {
	acks, err := r.nc.SubscribeSync(inputAckSubject(worker, turn))
	if err != nil {
		r.log.Warn("follow a remote turn's steering answers; messages during it queue", "turn", turn, "worker", worker, "err", err)
		steer.Close()
		return func() {}
	}
	f := &inputForwarder{nc: r.nc, subject: inputSubject(worker, turn), acks: acks}
	steer.Forward(f.send)
	return func() {
		steer.Close()
		_ = acks.Unsubscribe()
	}
}

// send publishes text and waits for the worker's answer (Steering holds
// one send at a time, so answers come in order).
func (f *inputForwarder) send(text string) bool {
	f.seq++
	data, _ := json.Marshal(wireInput{Seq: f.seq, Text: text})
	if err := f.nc.Publish(f.subject, data); err != nil {
		return false
	}
	deadline := time.Now().Add(inputAckWait)
	for {
		m, err := f.acks.NextMsg(time.Until(deadline))
		if err != nil {
			return false
		}
		var a wireInputAck
		if json.Unmarshal(m.Data, &a) == nil && a.Seq == f.seq {
			return a.OK
		}
	}
}

// workerInputs takes the steering messages of one turn on the worker.
type workerInputs struct {
	mu   sync.Mutex
	last int
}

// takeInputs writes the steering messages of turn into steer, in order,
// answering each; the returned stop ends it.
func (w *Worker) takeInputs(turn string, steer *agent.Steering) (stop func()) {
	in := &workerInputs{}
	ack := inputAckSubject(w.opt.ID, turn)
	sub, err := w.nc.Subscribe(inputSubject(w.opt.ID, turn), func(m *nats.Msg) {
		var msg wireInput
		if json.Unmarshal(m.Data, &msg) != nil {
			return
		}
		in.mu.Lock()
		ok := msg.Seq == in.last+1 && steer.Send(msg.Text)
		if ok {
			in.last = msg.Seq
		}
		in.mu.Unlock()
		data, _ := json.Marshal(wireInputAck{Seq: msg.Seq, OK: ok})
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
