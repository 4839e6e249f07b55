package agent

// Reaped is a process KillLeftovers killed, as the log shows it.
type Reaped struct {
	PID     int
	Command string // its command name (comm), "" when unreadable
	Turn    TurnID // the turn its environment names, if any
}
