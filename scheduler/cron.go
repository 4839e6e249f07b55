package scheduler

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// robfig/cron/v3 parses the spec into bit sets; its own Next is not used,
// because it skips a wall time that falls in a spring-forward gap and fires
// a repeated wall time twice (or not at all), and it evaluates in whatever
// zone the argument carries. Here the bit sets are walked over civil dates
// (no zone involved) to find the next matching wall time, and that wall time
// is then mapped to an instant in the task's zone by resolve.

// cronParser accepts exactly the 5 standard fields plus descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// starBit is robfig's marker for a field written as "*" (or "?"). It matters
// for the day fields: when either is a star both must match, otherwise
// either may (the classic cron rule "0 0 1 * 1" = the 1st or any Monday).
const starBit = uint64(1) << 63

// searchYears bounds the walk for a matching wall time. Any satisfiable
// spec matches within 8 years of any date (Feb 29 across a skipped leap
// year such as 2100), so finding nothing in this span means never.
const searchYears = 9

// maxRepeatSkips bounds the wall times Next passes over because their
// first occurrence is not after `after` (the repeated hour of a fall-back);
// even a 24-hour repeat of every minute stays below it.
const maxRepeatSkips = 2 * 24 * 60

// cronSpec holds the bit sets of a parsed cron spec: bit i set means value
// i matches (minute 0-59, hour 0-23, dom 1-31, month 1-12, dow 0-6 with 0 =
// Sunday).
type cronSpec struct {
	minute, hour, dom, month, dow uint64
	domStar, dowStar              bool
}

// parseCron parses a 5-field spec or a descriptor, rejecting specs that
// never fire. robfig's parser has panicked on odd input before (a lone
// "CRON_TZ=UTC"), so a panic is turned into an error here.
func parseCron(spec string) (c *cronSpec, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, badSchedule(spec, fmt.Sprintf("cron parser failed: %v", r))
		}
	}()
	parsed, err := cronParser.Parse(sundaySeven(spec))
	if err != nil {
		msg := err.Error()
		if rest, ok := strings.CutPrefix(msg, "failed to parse int from "); ok {
			msg = "bad field value " + rest
		}
		return nil, badSchedule(spec, msg)
	}
	ss, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, badSchedule(spec, "not a cron spec")
	}
	if ss.Second != 1 {
		return nil, badSchedule(spec, "seconds are not supported")
	}
	c = &cronSpec{
		minute:  ss.Minute &^ starBit,
		hour:    ss.Hour &^ starBit,
		dom:     ss.Dom &^ starBit,
		month:   ss.Month &^ starBit,
		dow:     ss.Dow &^ starBit,
		domStar: ss.Dom&starBit != 0,
		dowStar: ss.Dow&starBit != 0,
	}
	if _, ok := c.nextWall(wall{y: 2000, mo: 1, d: 1}, 2000+searchYears); !ok {
		return nil, badSchedule(spec, "it never fires (no date matches the day and month fields)")
	}
	return c, nil
}

// sundaySeven rewrites 7 in the day-of-week field of a 5-field spec as 0:
// most crons accept 7 for Sunday ("0 9 * * 7", "5-7"), robfig does not.
func sundaySeven(spec string) string {
	fields := strings.Fields(spec)
	if len(fields) != 5 || !strings.Contains(fields[4], "7") {
		return spec
	}
	var out []string
	for _, item := range strings.Split(fields[4], ",") {
		rng, step, hasStep := strings.Cut(item, "/")
		lo, hi, isRange := strings.Cut(rng, "-")
		switch {
		case rng == "7" && !hasStep:
			out = append(out, "0")
		case isRange && hi == "7":
			n, err := strconv.Atoi(lo)
			k := 1
			if hasStep {
				k, _ = strconv.Atoi(step)
			}
			if err != nil || n < 0 || n > 7 || k < 1 {
				out = append(out, item) // robfig reports it
				continue
			}
			if n <= 6 {
				suffix := ""
				if hasStep {
					suffix = "/" + step
				}
				out = append(out, lo+"-6"+suffix)
			}
			if (7-n)%k == 0 {
				out = append(out, "0")
			}
		default:
			out = append(out, item)
		}
	}
	fields[4] = strings.Join(out, ",")
	return strings.Join(fields, " ")
}

// next returns the first slot strictly after `after`: the earliest matching
// wall time whose instant in loc (see resolve) is after `after`.
//
// resolve is monotone (a later wall time never maps to an earlier instant)
// and the wall time of `after`, cut to the minute, maps to an instant not
// after `after`. So the walk starts at the following minute, and any
// candidate that still maps to an instant not after `after` belongs to a
// repeated (fall-back) stretch whose first occurrence has already passed:
// it is passed over, which is what makes a repeated wall time fire once.
func (c *cronSpec) next(after time.Time, loc *time.Location) (time.Time, bool) {
	from := wallOf(after.In(loc))
	from.mi++
	from.s = 0
	limit := from.y + searchYears
	for range maxRepeatSkips {
		w, ok := c.nextWall(from, limit)
		if !ok {
			return time.Time{}, false
		}
		if t := w.resolve(loc); t.After(after) {
			return t, true
		}
		from = w
		from.mi++
	}
	return time.Time{}, false
}

// nextWall returns the first wall time at or after from (whose minute may
// be 60 and hour 24: they roll over) that matches the spec, looking no
// further than the end of year limit. The post statement of each loop
// advances one field and resets the finer ones.
func (c *cronSpec) nextWall(from wall, limit int) (wall, bool) {
	y, mo, d, h, mi := from.y, from.mo, from.d, from.h, from.mi
	for ; y <= limit; y, mo, d, h, mi = y+1, 1, 1, 0, 0 {
		for ; mo <= 12; mo, d, h, mi = mo+1, 1, 0, 0 {
			if c.month&(1<<mo) == 0 {
				continue
			}
			dim := daysIn(y, mo)
			wd := weekday(y, mo, d)
			for ; d <= dim; d, h, mi, wd = d+1, 0, 0, (wd+1)%7 {
				if !c.dayMatches(d, wd) {
					continue
				}
				for ; h < 24; h, mi = h+1, 0 {
					if c.hour&(1<<h) == 0 {
						continue
					}
					if m, ok := nextBit(c.minute, mi, 59); ok {
						return wall{y: y, mo: mo, d: d, h: h, mi: m}, true
					}
				}
			}
		}
	}
	return wall{}, false
}

// dayMatches applies the cron day rule to day-of-month d, weekday wd.
func (c *cronSpec) dayMatches(d, wd int) bool {
	domOK := c.dom&(1<<d) != 0
	dowOK := c.dow&(1<<wd) != 0
	if c.domStar || c.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// nextBit returns the lowest set bit of mask in [from, max].
func nextBit(mask uint64, from, max int) (int, bool) {
	if from > max {
		return 0, false
	}
	m := mask >> from << from
	if m == 0 {
		return 0, false
	}
	if b := bits.TrailingZeros64(m); b <= max {
		return b, true
	}
	return 0, false
}

// daysIn returns the number of days in month mo of year y.
func daysIn(y, mo int) int {
	switch mo {
	case 4, 6, 9, 11:
		return 30
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	}
	return 31
}

// weekday returns the day of the week (0 = Sunday) of a proleptic
// Gregorian date, by Sakamoto's method.
func weekday(y, mo, d int) int {
	t := [...]int{0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4}
	if mo < 3 {
		y--
	}
	return (y + y/4 - y/100 + y/400 + t[mo-1] + d) % 7
}

// wall is a civil (wall-clock) time with no zone.
type wall struct {
	y, mo, d, h, mi, s int
}

// wallOf returns the wall time t shows in its own location.
func wallOf(t time.Time) wall {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return wall{y: y, mo: int(mo), d: d, h: h, mi: mi, s: s}
}

// offsetSpan bounds zone offsets (real ones lie within -12h and +14h; the
// margin covers historic local mean time): the instant of a wall time lies
// within offsetSpan of the same digits read as UTC.
const offsetSpan = 16 * 60 * 60

// resolve maps a wall time to an instant in loc, comparing instants only:
//   - a wall time that exists once maps to that instant;
//   - one that a fall-back repeats maps to its earliest instant;
//   - one inside a spring-forward gap maps to the first instant after the
//     gap (the transition itself).
//
// It walks the zone periods that can contain the wall time (usually one).
func (w wall) resolve(loc *time.Location) time.Time {
	naive := time.Date(w.y, time.Month(w.mo), w.d, w.h, w.mi, w.s, 0, time.UTC).Unix()
	t := time.Unix(naive-offsetSpan, 0).In(loc)
	var best, gap int64
	found, inGap := false, false
	prevOff, havePrev := 0, false
	for {
		_, off := t.Zone()
		start, end := t.ZoneBounds()
		if havePrev && off > prevOff && start.Unix()+int64(prevOff) <= naive && naive < start.Unix()+int64(off) {
			gap, inGap = start.Unix(), true
		}
		if cand := naive - int64(off); (start.IsZero() || cand >= start.Unix()) && (end.IsZero() || cand < end.Unix()) {
			if !found || cand < best {
				best, found = cand, true
			}
		}
		if end.IsZero() || end.Unix() > naive+offsetSpan || !end.After(t) {
			break
		}
		t, prevOff, havePrev = end, off, true
	}
	switch {
	case found:
		return time.Unix(best, 0).In(loc)
	case inGap:
		return time.Unix(gap, 0).In(loc)
	}
	// Unreachable with sane zone data; time.Date picks one reading.
	return time.Date(w.y, time.Month(w.mo), w.d, w.h, w.mi, w.s, 0, loc)
}
