// Package scheduler owns scheduled tasks (CONTRACT §10): parsing schedules
// (5-field cron and descriptors, intervals, one-shot instants), computing the
// next slot in the task's IANA zone with well-defined daylight-saving rules,
// the missed-run policy (skip, once, all) for slots that fell due while the
// gateway was down, and the due loop that claims slots and fires them.
//
// It is pure apart from the clock it is given: persistence sits behind the
// Store interface defined here (implemented by package store) and turns
// behind Firer (implemented by the gateway). It imports no project package.
//
// # Slots and time zones
//
// A slot is an instant (a time.Time compared with Before/After/Equal, never a
// wall-clock string). Every slot is a whole second, so a store that keeps Unix
// seconds round-trips slots exactly. Cron schedules are evaluated on the wall
// clock of the task's zone:
//
//   - A wall time that a spring-forward transition skips (02:30 on
//     2027-03-14 in America/New_York) fires at the first instant after the
//     gap (03:00 EDT), once, on that day. Several wall times inside one gap
//     (02:00, 02:15, 02:30 ...) all map to that instant and so fire once.
//   - A wall time that a fall-back transition repeats (01:30 on 2026-11-01 in
//     America/New_York) fires once, at its first (daylight) occurrence. Each
//     distinct wall time fires once, so an hourly job fires at 01:00 EDT and
//     then at 02:00 EST, and nothing fires during the repeated hour.
//
// Interval schedules ("@every 15m", "every 1h30m") are plain durations
// between instants and ignore the zone; the minimum is MinInterval. They are
// anchored: Next(slot) is slot+interval, so a task's slots stay regular however
// late each one was handled. One-shot schedules are an RFC 3339 instant; an
// instant without an offset ("2026-11-21T09:00") is read as wall time in the
// task's zone under the same gap and repeat rules as cron.
//
// # Firing at most once
//
// The Loop never fires a slot it has not first claimed: Store.ClaimRuns
// records the run and advances the task in one transaction, and only then is
// Firer.Fire called. A store that also keeps the queue of turns can do both
// in that one transaction (ClaimQueuer, with a Firer that is a TurnStarter),
// so that a crash leaves a slot either unclaimed or with its turn queued. A
// crash can lose a claimed slot only in the first way (see Loop), and can
// never fire one twice. See Store and ClaimQueuer for the exact contract a
// store must honour.
package scheduler

// The scheduler must evaluate zones the same way on every host, including a
// container without /usr/share/zoneinfo: embed the IANA database as the
// fallback that time.LoadLocation uses when the system copy is missing.
import _ "time/tzdata"
