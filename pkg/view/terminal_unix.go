//go:build linux || darwin

package view

import (
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
