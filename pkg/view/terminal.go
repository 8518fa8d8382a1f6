package view

import "os"

// IsTerminal reports whether f is a terminal (a character device), where the view may move the
// cursor and use colours.
func IsTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
