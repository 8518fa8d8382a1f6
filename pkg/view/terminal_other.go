//go:build !linux && !darwin

package view

import "os"

// TerminalSize returns the width and height, in cells, of the terminal f is, and false when f
// is not a terminal or, as on this platform, its size cannot be read.
func TerminalSize(f *os.File) (width, height int, ok bool) { return 0, 0, false }
