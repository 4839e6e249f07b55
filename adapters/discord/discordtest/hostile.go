package discordtest

import "strconv"

// DispatchRaw sends an event whose payload is raw bytes spliced into the
// frame as they are, as a hostile or broken gateway would: malformed
// objects, wrong types, huge fields. The write happens outside the fake's
// lock: a huge frame takes the bot a while to read, and its REST calls
// meanwhile must not wait for the frame.
func (f *Server) DispatchRaw(t, d string) {
	f.mu.Lock()
	f.seq++
	b := []byte(`{"op":0,"t":` + strconv.Quote(t) + `,"s":` + strconv.Itoa(f.seq) + `,"d":` + d + `}`)
	c := f.conn
	f.mu.Unlock()
	if c == nil || f.write(c, b) != nil {
		f.mu.Lock()
		f.missed = append(f.missed, b)
		f.mu.Unlock()
	}
	f.mu.Lock()
	f.notify()
	f.mu.Unlock()
}
