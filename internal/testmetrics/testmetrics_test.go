package testmetrics

import "testing"

const body = `# HELP c_total A counter.
# TYPE c_total counter
c_total{a="x",b="y"} 3
c_total{a="x",b="z"} 4
# HELP d_seconds A histogram.
# TYPE d_seconds histogram
d_seconds_bucket{trigger="message",le="+Inf"} 2
d_seconds_sum{trigger="message"} 1.5
d_seconds_count{trigger="message"} 2
# HELP g A gauge.
# TYPE g gauge
g 7
`

func TestValue(t *testing.T) {
	for series, want := range map[string]float64{
		`c_total{a="x",b="y"}`:               3,
		`c_total{b="z",a="x"}`:               4, // labels in any order
		`c_total{a="x"}`:                     0, // not all labels: no such series
		`c_total{a="x",b="w"}`:               0,
		`d_seconds_count{trigger="message"}`: 2,
		`d_seconds_sum{trigger="message"}`:   1.5,
		`g`:                                  7,
		`missing_total{a="x"}`:               0,
	} {
		if got := Value(t, body, series); got != want {
			t.Errorf("Value(%s) = %v; want %v", series, got, want)
		}
	}
}
