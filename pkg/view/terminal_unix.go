//go:build linux || darwin

package view

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// winsize is the kernel's struct winsize, which TIOCGWINSZ fills.
type winsize struct {
	rows, cols, xpixel, ypixel uint16
}

// TerminalSize returns the width and height, in cells, of the terminal f is, and false when f
// is not a terminal.
func TerminalSize(f *os.File) (width, height int, ok bool) {
	var ws winsize
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(syscall.TIOCGWINSZ), uintptr(unsafe.Pointer(&ws)))
	if errno != 0 || ws.rows == 0 || ws.cols == 0 {
		return 0, 0, false
	}
	return int(ws.cols), int(ws.rows), true
}

// EnableKeys puts the terminal f in the mode WatchOptions.Keys wants: each key press can be
// read as it is typed, and is not echoed; Ctrl-C still interrupts. restore puts the terminal
// back as it was.
func EnableKeys(f *os.File) (restore func() error, err error) {
	var saved syscall.Termios
	if err := termios(f, ioctlGetTermios, &saved); err != nil {
		return nil, fmt.Errorf("reading the terminal's mode: %w", err)
	}
	keys := saved
	keys.Lflag &^= syscall.ICANON | syscall.ECHO
	keys.Cc[syscall.VMIN], keys.Cc[syscall.VTIME] = 1, 0
	if err := termios(f, ioctlSetTermios, &keys); err != nil {
		return nil, fmt.Errorf("setting the terminal's mode: %w", err)
	}
	return func() error { return termios(f, ioctlSetTermios, &saved) }, nil
}

// termios gets or sets (as request says) the terminal attributes of f.
func termios(f *os.File, request uintptr, t *syscall.Termios) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), request, uintptr(unsafe.Pointer(t))); errno != 0 {
		return errno
	}
	return nil
}
