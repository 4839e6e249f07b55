// Package testmetrics reads samples out of a Prometheus text exposition
// (what /metrics serves) in tests, with the Prometheus parser.
package testmetrics

import (
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var labelRe = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// Value is the value of series — `name` or `name{label="value",...}`, the
// labels in any order and all of them given — in body; 0 when body has no
// such series. A counter, gauge or untyped sample; a histogram's or
// summary's `name_count` and `name_sum` are its count and sum.
func Value(t testing.TB, body, series string) float64 {
	t.Helper()
	name, want := parseSeries(t, series)
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("testmetrics: the exposition does not parse: %v", err)
	}
	part := ""
	f, ok := families[name]
	if !ok {
		for _, suffix := range []string{"_count", "_sum"} {
			if base, cut := strings.CutSuffix(name, suffix); cut {
				f, ok, part = families[base], families[base] != nil, suffix
			}
		}
	}
	if !ok {
		return 0
	}
	for _, m := range f.GetMetric() {
		if sameLabels(m.GetLabel(), want) {
			return value(m, part)
		}
	}
	return 0
}

func parseSeries(t testing.TB, series string) (string, map[string]string) {
	t.Helper()
	name, rest, hasLabels := strings.Cut(series, "{")
	labels := map[string]string{}
	if !hasLabels {
		return name, labels
	}
	rest, ok := strings.CutSuffix(rest, "}")
	if !ok {
		t.Fatalf("testmetrics: series %q: no closing }", series)
	}
	for _, m := range labelRe.FindAllStringSubmatch(rest, -1) {
		labels[m[1]] = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\n`, "\n").Replace(m[2])
	}
	return name, labels
}

func sameLabels(got []*dto.LabelPair, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, l := range got {
		if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
			return false
		}
	}
	return true
}

func value(m *dto.Metric, part string) float64 {
	switch {
	case m.Histogram != nil && part == "_sum":
		return m.Histogram.GetSampleSum()
	case m.Summary != nil && part == "_sum":
		return m.Summary.GetSampleSum()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	case m.Summary != nil:
		return float64(m.Summary.GetSampleCount())
	}
	return 0
}
