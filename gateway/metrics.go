package gateway

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/store"
)

// metrics are the gateway's Prometheus metrics, in a registry of their own.
// Label values come from small fixed sets (platforms, event kinds, triggers,
// outcomes, tool names): never chat ids or text.
type metrics struct {
	reg            *prometheus.Registry
	inbound        *prometheus.CounterVec
	unrouted       *prometheus.CounterVec
	turns          *prometheus.CounterVec
	turnSeconds    *prometheus.HistogramVec
	agentFailures  *prometheus.CounterVec
	outbox         *prometheus.CounterVec
	rateLimitWaits *prometheus.CounterVec
	mcpCalls       *prometheus.CounterVec
	fires          prometheus.Counter
	lateness       prometheus.Histogram
	commitBatch    prometheus.Histogram
}

// statusReader reads the store's size and outbox backlog (store.Status).
type statusReader interface {
	Status(ctx context.Context) (store.Status, error)
}

// newMetrics registers the gateway's metrics: states and st feed the
// gauges read at scrape time, runner the stale-upload count of a remote
// runner.
func newMetrics(states *adapterStates, st statusReader, runner agent.Runner) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		inbound: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_inbound_events_total",
			Help: "Inbound events stored, by platform and kind (message, edit, delete, reaction)."}, []string{"platform", "kind"}),
		unrouted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_unrouted_messages_total",
			Help: "New messages stored that no route matched (nothing ran), by platform."}, []string{"platform"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_turns_total",
			Help: "Agent turns finished, by trigger and outcome (succeeded, failed, timeout, user_stopped: by /stop or the Stop button, stopped: not run, limits.max_chain)."}, []string{"trigger", "outcome"}),
		turnSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchboard_turn_duration_seconds",
			Help: "How long agent turns ran.", Buckets: []float64{.1, .5, 1, 2, 5, 10, 30, 60, 120, 300, 600}}, []string{"trigger"}),
		agentFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_agent_failures_total",
			Help: "Agent turns that failed, by reason (timeout, exit, start)."}, []string{"reason"}),
		outbox: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_outbox_deliveries_total",
			Help: "Outbox delivery attempts by adapter and result (sent, failed, retried)."}, []string{"adapter", "result"}),
		rateLimitWaits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_rate_limit_waits_total",
			Help: "Rate limits a platform imposed (the adapter's sends paused)."}, []string{"adapter"}),
		mcpCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_mcp_calls_total",
			Help: "MCP tool calls by tool and outcome (allowed, refused, error)."}, []string{"tool", "outcome"}),
		fires: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_scheduler_fires_total",
			Help: "Scheduled task runs fired."}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_scheduler_lateness_seconds",
			Help: "How late a scheduled run fired after its slot.", Buckets: []float64{.01, .05, .1, .5, 1, 5, 30, 60, 300}}),
		commitBatch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_commit_messages",
			Help: "Messages stored per write transaction of the group commit (concurrent deliveries share one).", Buckets: prometheus.ExponentialBuckets(1, 2, 9)}),
	}
	m.reg.MustRegister(m.inbound, m.unrouted, m.turns, m.turnSeconds, m.agentFailures, m.outbox, m.rateLimitWaits, m.mcpCalls,
		m.fires, m.lateness, m.commitBatch, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		stateCollector{states: states, st: st, cache: &storeGauges{}})
	if sf, ok := runner.(agent.StaleFolderCounter); ok {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchboard_stale_folder_uploads_total",
			Help: "Folder changes from remote turns refused because the folder had moved on (a stale worker)."},
			func() float64 { return float64(sf.StaleFolderUploads()) }))
	}
	return m
}

// stateCollector reports, at scrape time, each adapter's connection state
// and — read from the store at most every storeEvery, however often
// Prometheus scrapes, in the background after the first scrape — the
// outbox backlog and the store's size.
type stateCollector struct {
	states *adapterStates
	st     statusReader
	cache  *storeGauges
}

const storeEvery = 5 * time.Second

type storeGauges struct {
	mu              sync.Mutex
	at              time.Time // of the last read; zero before the first
	refreshing      bool      // a read is under way
	pending, failed int
	bytes           int64
}

var (
	adapterUp = prometheus.NewDesc("switchboard_adapter_state", "1 for each adapter's current connection state.",
		[]string{"adapter", "state"}, nil)
	outboxGauge = prometheus.NewDesc("switchboard_outbox_items", "Outbox items pending (or being sent) and failed.",
		[]string{"status"}, nil)
	storeBytes = prometheus.NewDesc("switchboard_store_bytes", "Size of the database file and its WAL.", nil, nil)
)

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- adapterUp
	ch <- outboxGauge
	ch <- storeBytes
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	for name, st := range c.states.snapshot() {
		for _, s := range []adapters.State{adapters.StateConnecting, adapters.StateConnected, adapters.StateBackingOff, adapters.StateFailed} {
			v := 0.0
			if st.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(adapterUp, prometheus.GaugeValue, v, name, string(s))
		}
	}
	sg := c.cache
	sg.mu.Lock()
	switch {
	case sg.at.IsZero():
		// The first scrape reads them; later ones never wait for the
		// store: under a write load its answer took tens of milliseconds.
		sg.mu.Unlock()
		sg.refresh(c.st)
		sg.mu.Lock()
	case time.Since(sg.at) > storeEvery && !sg.refreshing:
		sg.refreshing = true
		go sg.refresh(c.st)
	}
	pending, failed, bytes := sg.pending, sg.failed, sg.bytes
	sg.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(outboxGauge, prometheus.GaugeValue, float64(pending), "pending")
	ch <- prometheus.MustNewConstMetric(outboxGauge, prometheus.GaugeValue, float64(failed), "failed")
	ch <- prometheus.MustNewConstMetric(storeBytes, prometheus.GaugeValue, float64(bytes))
}

// refresh reads the store's figures into sg.
func (sg *storeGauges) refresh(st statusReader) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	s, err := st.Status(ctx)
	cancel()
	sg.mu.Lock()
	defer sg.mu.Unlock()
	sg.refreshing = false
	if err == nil {
		sg.at, sg.pending, sg.failed, sg.bytes = time.Now(), s.OutboxPending, s.OutboxFailed, s.DBBytes
	}
}

// MetricsHandler serves /metrics in the Prometheus text format. Scrapes
// that arrive while a gather runs share its result, so many scrapers at once
// cost about one gather.
func (g *Gateway) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(&sharedGather{g: g.metrics.reg}, promhttp.HandlerOpts{})
}

// sharedGather runs one Gather at a time; callers that arrive while it runs
// wait for it and share its result, which misses at most what changed
// between that gather's start and their arrival.
type sharedGather struct {
	g  prometheus.Gatherer
	mu sync.Mutex
	in *gatherCall // the gather in flight, if any
}

type gatherCall struct {
	done chan struct{}
	mfs  []*dto.MetricFamily
	err  error
}

func (s *sharedGather) Gather() ([]*dto.MetricFamily, error) {
	s.mu.Lock()
	if c := s.in; c != nil {
		s.mu.Unlock()
		<-c.done
		return c.mfs, c.err
	}
	c := &gatherCall{done: make(chan struct{})}
	s.in = c
	s.mu.Unlock()
	c.mfs, c.err = s.g.Gather()
	s.mu.Lock()
	s.in = nil
	s.mu.Unlock()
	close(c.done)
	return c.mfs, c.err
}

// mcpCall counts an MCP tool call; ipc reports every call through it.
func (m *metrics) mcpCall(tool, outcome string) {
	m.mcpCalls.WithLabelValues(tool, outcome).Inc()
}

// RateLimited lists the enabled adapters that are ready (connected) but
// hold their requests for a platform's 429 (adapters.Hold), each as
// "adapter NAME: backing_off: rate limited: retry after ...": /readyz
// shows them beside its 200 (CONTRACT §13: an adapter's state is visible
// in /readyz) without turning away the messages they still take in.
func (g *Gateway) RateLimited() []string {
	var out []string
	for name, st := range g.states.rateLimited() {
		if _, enabled := g.adapters[name]; enabled {
			out = append(out, "adapter "+name+": "+string(st.State)+": "+st.Err)
		}
	}
	slices.Sort(out)
	return out
}

// NotReady lists what keeps the gateway from being ready: the store not
// writable, or an enabled adapter not connected. Empty means ready.
func (g *Gateway) NotReady(ctx context.Context) []string {
	var out []string
	if why, known := g.probe.notReady(time.Now()); known {
		if why != "" {
			out = append(out, why)
		}
	} else if err := g.st.Ping(ctx); err != nil {
		out = append(out, "store: "+err.Error())
	}
	states := g.states.connections()
	for name := range g.adapters {
		st, ok := states[name]
		switch {
		case !ok:
			out = append(out, "adapter "+name+": not started")
		case st.State != adapters.StateConnected:
			msg := "adapter " + name + ": " + string(st.State)
			if st.Err != "" {
				msg += ": " + st.Err
			}
			out = append(out, msg)
		}
	}
	return out
}
