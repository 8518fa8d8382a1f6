package view

import (
	"bytes"
	"io"
)

// key is what a key press asks of a live view.
type key int

const (
	keyNextPage key = iota + 1
	keyPreviousPage
	keyFirstPage
	keyLastPage
	keyQuit
)

// keySequences are the escape sequences terminals send for the keys a live view reads: the
// arrows (in normal and application cursor mode), PgUp, PgDn, Home and End.
var keySequences = []struct {
	seq string
	key key
}{
	{"\x1b[C", keyNextPage}, {"\x1bOC", keyNextPage}, {"\x1b[6~", keyNextPage},
	{"\x1b[D", keyPreviousPage}, {"\x1bOD", keyPreviousPage}, {"\x1b[5~", keyPreviousPage},
	{"\x1b[H", keyFirstPage}, {"\x1bOH", keyFirstPage}, {"\x1b[1~", keyFirstPage}, {"\x1b[7~", keyFirstPage},
	{"\x1b[F", keyLastPage}, {"\x1bOF", keyLastPage}, {"\x1b[4~", keyLastPage}, {"\x1b[8~", keyLastPage},
}

// ctrlC is the byte Ctrl-C sends when the terminal does not turn it into an interrupt.
const ctrlC = 0x03

// parseKeys returns the keys in b, what a read from the terminal gave, in order. It skips the
// bytes and escape sequences of other keys.
func parseKeys(b []byte) []key {
	var keys []key
	for len(b) > 0 {
		if b[0] == '\x1b' {
			k, n := parseEscape(b)
			if k != 0 {
				keys = append(keys, k)
			}
			b = b[n:]
			continue
		}
		switch b[0] {
		case 'l', ' ':
			keys = append(keys, keyNextPage)
		case 'h':
			keys = append(keys, keyPreviousPage)
		case 'g':
			keys = append(keys, keyFirstPage)
		case 'G':
			keys = append(keys, keyLastPage)
		case 'q', 'Q', ctrlC:
			keys = append(keys, keyQuit)
		}
		b = b[1:]
	}
	return keys
}

// parseEscape reads the escape sequence b starts with: the key it is (0 for another key) and
// its length.
func parseEscape(b []byte) (key, int) {
	for _, s := range keySequences {
		if bytes.HasPrefix(b, []byte(s.seq)) {
			return s.key, len(s.seq)
		}
	}
	// Another sequence: ESC [ parameters final-byte, ESC O byte, or ESC and a byte (Alt+key).
	switch {
	case len(b) >= 2 && b[1] == '[':
		n := 2
		for n < len(b) && (b[n] < 0x40 || b[n] > 0x7e) {
			n++
		}
		return 0, min(n+1, len(b))
	case len(b) >= 3 && b[1] == 'O':
		return 0, 3
	default:
		return 0, min(2, len(b))
	}
}

// readKeys reads r until it fails or ends and sends the keys it reads, in order; it closes the
// channel when r ends, and stops sending once done is closed.
func readKeys(r io.Reader, done <-chan struct{}) <-chan key {
	keys := make(chan key)
	go func() {
		defer close(keys)
		buf := make([]byte, 64)
		for {
			n, err := r.Read(buf)
			for _, k := range parseKeys(buf[:n]) {
				select {
				case keys <- k:
				case <-done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return keys
}
