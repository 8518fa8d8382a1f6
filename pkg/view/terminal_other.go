//go:build !linux && !darwin

package view

import (
	"errors"
	"os"
)

// TerminalSize returns the width and height, in cells, of the terminal f is, and false when f
// is not a terminal or, as on this platform, its size cannot be read.
func TerminalSize(f *os.File) (width, height int, ok bool) { return 0, 0, false }

// EnableKeys would put the terminal f in the mode WatchOptions.Keys wants; on this platform it
// cannot, and returns an error.
func EnableKeys(f *os.File) (restore func() error, err error) {
	return nil, errors.New("reading keys from the terminal is not supported on this platform")
}
